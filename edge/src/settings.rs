//! Settings from the worker's environment (wrangler vars and secrets).

use stasis_domain::{limits, snapshot};
use worker::Env;

/// The token secret, if configured and long enough.
pub fn secret(env: &Env) -> Option<Vec<u8>> {
    let secret = env.secret("STASIS_SECRET").ok()?.to_string();
    let secret = secret.trim();
    (secret.len() >= 16).then(|| secret.as_bytes().to_vec())
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
