//! The container client (`stasis-client`) against a real `stasis serve`, the way a container
//! uses it: snapshots pushed from a live SQLite database while another process writes to it and
//! pulled back verified, `boot` after an eviction, `drain` within a budget, the CLI binary, and
//! the agent sidecar beside a synthetic kilo.
//!
//! It guards against the client and the server drifting apart: the client's own tests run
//! against a mock written from the contract, and only a real server shows that both read
//! docs/http-api.md the same way (error codes, headers, the town's answers).
//!
//! The writer is this same test binary re-run with `STASIS_E2E_WRITER_DB` set, so that it holds
//! its own SQLite connection and file locks in another process, as kilo does. The helpers are
//! in helpers/; each other module holds one part of the run.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod boot;
mod chunked;
mod cli;
mod drain;
mod fallback;
mod helpers;
mod known_chunks;
mod push_pull;
mod sidecar;
#[path = "../support/mod.rs"]
mod support;
mod tail;
mod town_fixture;

use std::path::Path;

use helpers::{WRITER_ENV, write_until_stopped};

/// Not a test of its own: the writer process, active only when re-run by the tests below.
#[test]
fn writer_process() {
    if let Ok(path) = std::env::var(WRITER_ENV) {
        write_until_stopped(Path::new(&path));
    }
}
