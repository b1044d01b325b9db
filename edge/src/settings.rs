//! Settings from the worker's environment (wrangler vars and secrets).

use stasis_api::auth::{KeyError, KeyRing, KeySettings};
use stasis_domain::{limits, snapshot};
use worker::Env;

/// The token keys, from the wrangler secrets `STASIS_SECRET` and
/// `STASIS_KEYS` and the secret or var `STASIS_SIGNING_KEY_ID`, read as the
/// host reads its settings; `None` when neither secret is set.
pub fn keys(env: &Env) -> Result<Option<KeyRing>, KeyError> {
    let secret = |name: &str| env.secret(name).ok().map(|s| s.to_string());
    let signing = secret("STASIS_SIGNING_KEY_ID")
        .or_else(|| env.var("STASIS_SIGNING_KEY_ID").ok().map(|v| v.to_string()));
    let (single, listed) = (secret("STASIS_SECRET"), secret("STASIS_KEYS"));
    KeyRing::from_settings(&KeySettings {
        secret: single.as_deref(),
        keys: listed.as_deref(),
        signing_key_id: signing.as_deref(),
    })
}

/// Retention: `STASIS_MAX_EVENTS_PER_AGENT`, default 10,000.
pub fn max_events(env: &Env) -> u64 {
    env.var("STASIS_MAX_EVENTS_PER_AGENT")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(limits::DEFAULT_MAX_EVENTS)
}

/// `STASIS_SNAPSHOT_INLINE_LIMIT`, default 1 MiB, never above the most a
/// Durable Object row holds.
pub fn snapshot_inline_limit(env: &Env) -> u64 {
    env.var("STASIS_SNAPSHOT_INLINE_LIMIT")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<u64>().ok())
        .unwrap_or(snapshot::DEFAULT_INLINE_LIMIT)
        .min(snapshot::MAX_INLINE_LIMIT)
}

/// `STASIS_MAX_SNAPSHOT_BYTES`, default 1 GiB: the largest snapshot
/// accepted. A whole-file PUT is also bounded by the platform's request
/// body limit (100 MB on most plans); the delta protocol is not.
pub fn snapshot_limit(env: &Env) -> u64 {
    env.var("STASIS_MAX_SNAPSHOT_BYTES")
        .ok()
        .and_then(|v| v.to_string().trim().parse::<u64>().ok())
        .unwrap_or(snapshot::DEFAULT_SNAPSHOT_LIMIT)
}

/// The clock (wasm32 has no portable one; the Workers runtime has Date).
pub fn now_ms() -> i64 {
    i64::try_from(worker::Date::now().as_millis()).unwrap_or(i64::MAX)
}
