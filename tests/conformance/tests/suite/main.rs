//! The conformance suite: every HTTP case, run against the server that
//! `STASIS_URL` names (a local host or the edge worker under `wrangler dev
//! --local`), as one test binary.
//!
//! One binary rather than one per case file: the cases wait mostly on the
//! server, so `scripts/test` runs them all at once with more test threads
//! than cores, and a clean build links one binary instead of forty. Each
//! module is one concern; filter with its name, e.g.
//! `cargo test -p stasis-conformance --test suite fork::`.
//! Cases share nothing but the server: each makes its own town and agents
//! with `unique_id`, so any order and any interleaving must pass, with
//! one exception: [`timed`] and [`large_transfer`].

mod agent_sessions;
mod agents;
mod append;
mod auth;
mod auth_matrix;
mod bootstrap;
mod checkpoint;
mod concurrency;
mod conversation;
mod dispatch;
mod export_import;
mod fencing;
mod fork;
mod fuzz;
mod history;
mod idempotency;
mod ids;
mod import_parts;
mod inbox;
mod json_limits;
mod large_manifests;
mod limits;
mod liveness;
mod mayor;
mod memory;
mod openapi;
mod operator_page;
mod order;
mod read;
mod restore;
mod retention;
mod retries;
mod routing;
mod scenario;
mod sessions;
mod snapshot_chunks;
mod snapshots;
mod sse;
mod summaries;
mod tokens;
mod town;
mod workspace_batches;
mod workspaces;

/// Taken (shared) by a case whose assertions hold only if the server answers
/// within a window: the liveness timeout, a token's lifetime, a retention
/// window. Under `wrangler dev --local` every Durable Object runs on one
/// workerd thread, and a 75 MB import holds it for tens of seconds, so
/// such a case never runs beside a [`large_transfer`]. (In CI the liveness
/// case, beside one, saw its 10 s window pass between a heartbeat and the
/// next answer.)
static WINDOWS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// For a case with a time window; see [`WINDOWS`].
pub fn timed() -> std::sync::RwLockReadGuard<'static, ()> {
    WINDOWS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// For a case that moves tens of megabytes in one request: it runs alone
/// among such cases and beside no [`timed`] one. Two such transfers at
/// once under `wrangler dev --local` lost a connection inside workerd
/// ("Network connection lost", which wrangler's proxy answers as 503
/// "Your worker restarted mid-request") in 2 of 6 runs; taking turns, 0 of 4.
pub fn large_transfer() -> std::sync::RwLockWriteGuard<'static, ()> {
    WINDOWS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
