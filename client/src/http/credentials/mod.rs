//! The bearer token a client sends, kept alive.
//!
//! - **Refresh.** A stasis token is a JWT whose claims say when it was issued and when it
//!   expires. Once half its lifetime has passed, the next request first refreshes it (`POST
//!   /api/token/refresh`), under a lock, so that concurrent threads refresh it once. A refresh
//!   that fails leaves the token in use until it expires (the next request tries again).
//! - **Container tokens.** A command that acts as one container (`boot`, `sidecar`, `drain`)
//!   first binds the client to it ([`Client::bind_container`]): a bootstrap, town or admin token
//!   is exchanged for a container token of that container (`POST /api/towns/{town}/
//!   container-token`), so that every write it makes is fenced. A container is started with a
//!   bootstrap token, which stasis exchanges once, for one container, and never refreshes. When stasis cannot be reached
//!   then, the command goes on with its configured token and the next request tries again.
//! - **The token file.** Bound commands share their container token through a file
//!   (`{root}/stasis-token-{container}`, 0600): `boot` writes it, a sidecar or `drain` starts from
//!   it, and every refresh writes it back; before refreshing, a fresher token there is adopted
//!   instead. A drain at the end of a container's long life thus finds a live token even when
//!   the one the container started with has expired.
//! - **Expired anyway** (a container that slept through its token's lifetime): on a 401
//!   `expired` the request is tried once more after adopting a fresher token from the file, or
//!   after exchanging the configured token again while that one is still valid.
//!
//! An opaque token (not a JWT), or none, is sent as it is.

mod held;
mod mint;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use held::Held;
pub use held::TokenClaims;

use crate::error::{Error, Result};
use crate::http::Client;

/// The token file of `container_id` under `root`: `{root}/stasis-token-{container_id}`.
pub fn token_file(root: &Path, container_id: &str) -> PathBuf {
    root.join(format!("stasis-token-{container_id}"))
}

/// The container a client acts as.
#[derive(Debug, Clone)]
struct Binding {
    town: String,
    container_id: String,
    file: Option<PathBuf>,
}

/// The token in use, and how to keep it alive. Shared by every clone of a [`Client`].
#[derive(Debug)]
pub(crate) struct Credentials {
    held: Mutex<Option<Held>>,
    /// The token the client was configured with (`STASIS_TOKEN`).
    configured: Option<String>,
    binding: Mutex<Option<Binding>>,
    /// Held while one thread refreshes or exchanges.
    minting: Mutex<()>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Credentials {
    /// Credentials starting from `token`.
    pub(crate) fn new(token: Option<String>) -> Self {
        Credentials {
            held: Mutex::new(token.clone().map(Held::from_text)),
            configured: token,
            binding: Mutex::new(None),
            minting: Mutex::new(()),
        }
    }

    fn current(&self) -> Option<Held> {
        lock(&self.held).clone()
    }

    fn adopt(&self, held: Held) -> Result<()> {
        let file = lock(&self.binding).as_ref().and_then(|b| b.file.clone());
        if let Some(file) = file {
            mint::write_file(&file, &held.token)?;
        }
        *lock(&self.held) = Some(held);
        Ok(())
    }

    /// The `Authorization` value for the next request, refreshing the token first when due.
    /// Fails only when stasis refuses to refresh it because the container is fenced.
    pub(crate) fn authorization(&self, client: &Client) -> Result<Option<String>> {
        if self.current().is_some_and(|h| h.due(Instant::now())) {
            self.refresh(client)?;
        }
        Ok(self.current().map(|h| format!("Bearer {}", h.token)))
    }

    fn refresh(&self, client: &Client) -> Result<()> {
        let _minting = lock(&self.minting);
        let Some(held) = self.current().filter(|h| h.due(Instant::now())) else {
            return Ok(()); // another thread refreshed it meanwhile
        };
        if let Some(fresher) = self.shared_in_file().filter(|f| f.outlives(&held)) {
            return self.adopt(fresher);
        }
        match self.renew(client, &held) {
            Ok(fresh) => self.adopt(fresh),
            Err(error) if mint::is_fenced(&error) => Err(error),
            Err(error) if mint::never_refreshed(&error) => {
                if let Some(current) = lock(&self.held).as_mut() {
                    current.refresh_at = None;
                }
                Ok(())
            }
            Err(_) => {
                // Keep it while it lasts; the next request tries again.
                let mut current = lock(&self.held);
                if let Some(current) = current.as_mut() {
                    current.refresh_at = Some(Instant::now() + RETRY_REFRESH);
                }
                Ok(())
            }
        }
    }

    /// A fresh token for `held`: a refresh, or the exchange a binding still waits for (when
    /// stasis could not be reached at [`Credentials::bind`]).
    fn renew(&self, client: &Client, held: &Held) -> Result<Held> {
        let binding = lock(&self.binding).clone();
        let unbound = held.claims.as_ref().is_some_and(|c| c.scope != "container");
        match binding {
            Some(b) if unbound => mint::exchange(client, &held.token, &b.town, &b.container_id),
            _ => mint::refresh(client, &held.token),
        }
    }

    /// After a 401 `expired`: a fresher token from the file, or the configured token exchanged
    /// again. True when the request is worth sending once more.
    pub(crate) fn recover_expired(&self, client: &Client) -> bool {
        let _minting = lock(&self.minting);
        let Some(held) = self.current() else {
            return false;
        };
        if let Some(fresher) = self.shared_in_file().filter(|f| f.outlives(&held)) {
            return self.adopt(fresher).is_ok();
        }
        let binding = lock(&self.binding).clone();
        let configured = self.configured.clone().map(Held::from_text);
        match (binding, configured) {
            (Some(binding), Some(configured))
                if configured.token != held.token && configured.valid(Instant::now()) =>
            {
                mint::exchange(
                    client,
                    &configured.token,
                    &binding.town,
                    &binding.container_id,
                )
                .and_then(|fresh| self.adopt(fresh))
                .is_ok()
            }
            _ => false,
        }
    }

    /// A token to exchange for another container's token: `held` unless it is bound to a
    /// container already, else the configured token if that one is not (a client bound to one
    /// container and then to another, as a test or a bench may do with one client).
    fn exchangeable(&self, held: Held) -> Option<Held> {
        let bound = |h: &Held| h.claims.as_ref().is_some_and(|c| c.scope == "container");
        if !bound(&held) {
            return Some(held);
        }
        let configured = Held::from_text(self.configured.clone()?);
        (!bound(&configured) && configured.valid(Instant::now())).then_some(configured)
    }

    fn shared_in_file(&self) -> Option<Held> {
        let binding = lock(&self.binding).clone()?;
        let held = mint::read_file(binding.file.as_deref()?)?;
        let binds = held
            .claims
            .as_ref()
            .is_some_and(|c| c.binds(&binding.town, &binding.container_id));
        (binds && held.valid(Instant::now())).then_some(held)
    }

    /// See [`Client::bind_container`].
    pub(crate) fn bind(
        &self,
        client: &Client,
        town: &str,
        container_id: &str,
        file: Option<&Path>,
    ) -> Result<()> {
        let _minting = lock(&self.minting);
        *lock(&self.binding) = Some(Binding {
            town: town.to_owned(),
            container_id: container_id.to_owned(),
            file: file.map(Path::to_owned),
        });
        if let Some(shared) = self.shared_in_file() {
            *lock(&self.held) = Some(shared);
            return Ok(());
        }
        let Some(held) = self.current() else {
            return Ok(());
        };
        let Some(claims) = &held.claims else {
            return Ok(()); // an opaque token: the server decides what it reaches
        };
        if claims.binds(town, container_id) {
            return self.adopt(held);
        }
        let Some(held) = self.exchangeable(held) else {
            return Ok(()); // another container's: the server refuses what it names
        };
        match mint::exchange(client, &held.token, town, container_id) {
            Ok(fresh) => self.adopt(fresh),
            Err(error) if mint::tokens_disabled(&error) => Ok(()),
            Err(error) if mint::unreachable(&error) => {
                // Go on with the configured token; the next request tries the exchange again.
                if let Some(current) = lock(&self.held).as_mut() {
                    current.refresh_at = Some(Instant::now());
                }
                Ok(())
            }
            Err(error) => Err(error),
        }
    }
}

/// How long a token whose refresh failed is used before the next try.
const RETRY_REFRESH: std::time::Duration = std::time::Duration::from_secs(5);

impl Client {
    /// Makes this client (and its clones) act as container `container_id` of `town`: a
    /// bootstrap, town or admin token is exchanged for a container token of it, so that stasis fences what it
    /// writes; with `token_file`, the container token is shared there (see the module doc).
    /// Refused with 409 `container_fenced` when another container has taken the town over
    /// from this one.
    pub fn bind_container(
        &self,
        town: &str,
        container_id: &str,
        token_file: Option<&Path>,
    ) -> Result<()> {
        crate::ids::check_id("town", town)?;
        crate::ids::check_id("container", container_id)?;
        self.credentials()
            .bind(self, town, container_id, token_file)
    }
}

/// Whether `error` is a 401 for an expired token.
pub(crate) fn is_expired(error: &Error) -> bool {
    match error.root() {
        Error::Api {
            status: 401,
            detail: Some(detail),
            ..
        } => detail.get("reason").and_then(serde_json::Value::as_str) == Some("expired"),
        _ => false,
    }
}
