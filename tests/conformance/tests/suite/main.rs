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
//! with `unique_id`, so any order and any interleaving must pass.
//!
//! The cases that move 75 MB in one request are not here: they run alone
//! (`tests/large_manifests.rs`), as the 100 MB snapshots do.

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
