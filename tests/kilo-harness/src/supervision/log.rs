//! Reading an agent's log for what its supervisor recorded, and a town token to read it with.

use crate::story::{StasisApi, StoredEvent};
use anyhow::{Context, Result, bail};
use serde_json::Value;
use stasis_api::auth::{DEFAULT_TTL, Grant, KeyRing, Scope};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A town token for `town`, minted from the server's secret.
///
/// # Errors
///
/// When the secret is unusable.
pub fn town_token(secret: &str, town: &str) -> Result<String> {
    let keys = KeyRing::single(secret).context("stasis's secret")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    keys.mint(&Grant::new(Scope::Town(town.to_owned())), now, DEFAULT_TTL)
        .context("minting the town's token")
}

/// `at` in milliseconds since the epoch (0 before it).
pub fn epoch_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// An event's data, parsed.
pub fn data(event: &StoredEvent) -> Value {
    serde_json::from_str(event.data.get()).unwrap_or(Value::Null)
}

/// The number at `pointer` in the event's data.
pub fn number(event: &StoredEvent, pointer: &str) -> Option<u64> {
    data(event).pointer(pointer)?.as_u64()
}

/// The events of `agent_path` after `after`, of the supervisor's own making (`stasis.runtime.*`,
/// `stasis.turn.*`, `stasis.eviction.*`).
///
/// # Errors
///
/// When stasis cannot be read.
pub fn supervisor_events(
    api: &StasisApi,
    agent_path: &str,
    after: u64,
) -> Result<Vec<StoredEvent>> {
    Ok(api
        .events_after(agent_path, after)?
        .into_iter()
        .filter(|e| {
            ["stasis.runtime.", "stasis.turn.", "stasis.eviction."]
                .iter()
                .any(|prefix| e.kind.starts_with(prefix))
        })
        .collect())
}

/// The newest seq of the log (0 when empty).
///
/// # Errors
///
/// When stasis cannot be read.
pub fn last_seq(api: &StasisApi, agent_path: &str) -> Result<u64> {
    Ok(api.events_after(agent_path, 0)?.last().map_or(0, |e| e.seq))
}

/// Calls `check` every 100 ms until it answers `Some`, for at most `within`; `alive` fails the
/// wait early (the container exited).
///
/// # Errors
///
/// When time runs out, or `check` or `alive` fail.
pub fn poll<T>(
    what: &str,
    within: Duration,
    mut alive: impl FnMut() -> Result<()>,
    mut check: impl FnMut() -> Result<Option<T>>,
) -> Result<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = check()? {
            return Ok(found);
        }
        alive()?;
        if Instant::now() >= deadline {
            bail!("waited {within:?} for {what}, in vain");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET {path}` with the stage's token, as JSON.
///
/// # Errors
///
/// On a transport error, a status other than 2xx, or a body that is not JSON.
pub fn get_json(api: &StasisApi, path: &str) -> Result<Value> {
    let response = ureq::get(format!("{}{path}", api.base()))
        .header("Authorization", format!("Bearer {}", api.token()))
        .call()
        .with_context(|| format!("GET {path}"))?;
    let body = response.into_body().read_to_string()?;
    serde_json::from_str(&body).with_context(|| format!("GET {path}'s answer"))
}
