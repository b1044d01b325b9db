//! The local stasis runtime.
//!
//! `stasis serve` runs the wasm components (event log, and later sessions
//! and snapshots) in wasmtime over one SQLite database per object and a KV
//! folder, and serves the shared HTTP contract of `stasis-api` with hyper.
//!
//! - [`runtime`]: the components, the per-object executor (serialised,
//!   atomic, group-committed) and the [`stasis_api::Objects`] port over them.
//! - [`server`]: HTTP in, `stasis_api::Api` calls, HTTP out.
//! - [`config`]: settings, the secret, and what defaults to what.
//! - [`metrics`]: what `GET /metrics` serves.

pub mod config;
pub mod metrics;
pub mod panics;
pub mod runtime;
pub mod server;
