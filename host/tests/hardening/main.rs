//! What a client can hold open on a real `stasis serve`, and what the host
//! says when things fail.
//!
//! It guards against the failures a black-box probe of the release host
//! found: sockets that stay open for ever (a partial head, a stalled body,
//! an idle keep-alive connection), a full descriptor table that makes the
//! accept loop spin and flood the log, every agent ever served staying open
//! until new ones fail, `/healthz` answering 200 while writes fail, and
//! 500s that reach nobody's log; caps that did not fit the open-file limit,
//! idle connections and tails crowding out requests, and a full disk that
//! let nothing be read or deleted. Each module holds one of them; every
//! setting is made short so the run stays quick.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod connection_cap;
mod descriptor_budget;
mod disk_full;
mod health;
mod open_file_limit;
mod open_objects;
mod raw;
mod server_errors;
mod slow_clients;
#[path = "../support/mod.rs"]
mod support;
mod timeouts;

use std::path::Path;
use support::{Options, Server};

/// A server over a fresh data folder (components precompiled) with `flags`.
fn start(data: &Path, flags: &[&str], options: &Options) -> Server {
    support::with_compiled_components(data);
    Server::start_with(data, flags, options)
}
