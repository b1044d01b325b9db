//! The two requests that mint tokens (a container token for this container, a refresh), and
//! the token file a container's processes share.
//!
//! These requests carry the token they present themselves: they never go through
//! [`super::Credentials`] (which calls them), so a refresh cannot recurse.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::held::Held;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::town_path;
use crate::retry::{self, RetryPolicy};

/// A minted token, as the server answers it (times in ms since the epoch).
#[derive(Debug, Deserialize)]
struct Issued {
    token: String,
    issued_at: u64,
    expires_at: u64,
}

impl Issued {
    fn held(self) -> Held {
        let lifetime = Duration::from_millis(self.expires_at.saturating_sub(self.issued_at));
        Held::issued(self.token, lifetime)
    }
}

/// `POST /api/towns/{town}/container-token {container_id}` presenting `token`.
pub(super) fn exchange(
    client: &Client,
    token: &str,
    town: &str,
    container_id: &str,
) -> Result<Held> {
    let path = format!("{}/container-token", town_path(town)?);
    post(
        client,
        &path,
        token,
        &json!({ "container_id": container_id }),
    )
}

/// `POST /api/token/refresh` presenting `token`.
pub(super) fn refresh(client: &Client, token: &str) -> Result<Held> {
    post(client, "/api/token/refresh", token, &json!({}))
}

/// A few quick attempts: a request waiting on a token waits at most about 10 s.
const MINT_POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    max_elapsed: Duration::from_secs(10),
    initial_delay: Duration::from_millis(250),
    max_delay: Duration::from_secs(2),
};

fn post(client: &Client, path: &str, token: &str, body: &Value) -> Result<Held> {
    let what = format!("POST {path}");
    let notify = |notice: &retry::RetryNotice<'_>| client.notify_retry(notice);
    let issued: Issued = retry::run(&MINT_POLICY, None, &what, &notify, || {
        let response = client
            .agent()
            .post(client.config().url(path))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes())
            .map_err(|e| http::transport(&what, e))?;
        http::read_json(&what, http::check_status(&what, response)?)
    })?;
    Ok(issued.held())
}

/// The token in `file`, if it holds one.
pub(super) fn read_file(file: &Path) -> Option<Held> {
    let text = std::fs::read_to_string(file).ok()?;
    let token = text.trim();
    (!token.is_empty()).then(|| Held::from_text(token.to_owned()))
}

/// Replaces `file` with `token` atomically, readable by this user only.
pub(super) fn write_file(file: &Path, token: &str) -> Result<()> {
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let context = || format!("writing the token file {}", file.display());
    std::fs::create_dir_all(dir).map_err(|e| Error::io(context(), e))?;
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(context(), e))?;
    temp.write_all(token.as_bytes())
        .and_then(|()| temp.as_file().sync_all())
        .map_err(|e| Error::io(context(), e))?;
    temp.persist(file)
        .map(drop)
        .map_err(|e| Error::io(context(), e.error))
}

/// Whether a failed mint attempt is the container being fenced: final, and what the command
/// must exit on.
pub(super) fn is_fenced(error: &Error) -> bool {
    matches!(
        error.code(),
        Some("container_fenced" | "container_not_current")
    )
}

/// Whether stasis refused to refresh the token for good: its line of tokens reached its absolute
/// lifetime, or it is a bootstrap token (only ever exchanged). It is used until it expires.
pub(super) fn never_refreshed(error: &Error) -> bool {
    match error.root() {
        Error::Api {
            status: 403,
            detail: Some(detail),
            ..
        } => matches!(
            detail.get("reason").and_then(Value::as_str),
            Some("absolute_lifetime" | "bootstrap_only")
        ),
        _ => false,
    }
}

/// Whether stasis could not be reached (or kept failing): not a refusal.
pub(super) fn unreachable(error: &Error) -> bool {
    !matches!(error.root(), Error::Api { status, .. } if *status < 500)
}

/// Whether the server issues no tokens (it runs without keys): keep the configured token.
pub(super) fn tokens_disabled(error: &Error) -> bool {
    error.code() == Some("tokens_disabled")
}
