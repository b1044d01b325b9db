//! The agent's state beside its log (record, sessions, checkpoint, memory,
//! export / import), checked against real SQLite. Refusals are checked to
//! change nothing even without the runtime's rollback: every rule runs
//! before the first write.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

mod agent;
mod checkpoint;
mod destroy;
mod export_import;
mod malformed_manifests;
mod memory;
mod random_histories;
mod sessions;
mod staging;
mod wire;
