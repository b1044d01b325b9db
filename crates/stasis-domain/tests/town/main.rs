//! The town object's rules, checked against real SQLite.
//!
//! Guards the failure stasis exists for: a container restart must not lose
//! the Mayor's work. An eviction drains the town; a message for the Mayor
//! during the gap is deferred; the late heartbeat of the dying container
//! must not end the drain; the next container's heartbeat ends it and gets
//! the deferred dispatch, exactly once.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "tests write their JSON inputs with json! and read answers as Values"
)]
#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

mod agents;
mod bootstrap;
mod dispatch;
mod drain;
mod fencing;
mod liveness;
mod random_runs;
mod registry;
mod restart;
mod retries;
mod town_log;
mod wire;
