//! The workloads, each against any [`Log`](crate::logs::Log) on any
//! [`Endpoint`](crate::client::Endpoint): stasis (spawned or given by URL)
//! or the peer. Those past the event log (snapshots, `snapshot push`, the
//! conversation rebuild, recovery, peak memory) speak to stasis only.

pub mod catchup;
pub mod conversation;
pub mod delta;
pub mod latency;
pub mod many_agents;
pub mod memory;
pub mod push;
pub mod recovery;
pub mod restore;
pub mod snapshot;
pub mod sse;
pub mod startup;
pub mod summaries;
pub mod throughput;

use crate::client::Endpoint;
use anyhow::Result;
use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

/// Every loop stops at whichever comes first: `count` operations or `time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most operations (requests, batches, reads, starts) to run.
    pub count: u64,
    /// The longest the loop may run.
    pub time: Duration,
}

impl Bounds {
    /// At most `count` operations within `secs` seconds.
    pub const fn new(count: u64, secs: u64) -> Self {
        Self {
            count,
            time: Duration::from_secs(secs),
        }
    }
}

/// A `stasis-client` for `endpoint`, as a container would hold one, with a
/// count of the requests it retried (a retry inside a timed push or boot
/// would otherwise pass unseen).
pub fn container_client(endpoint: &Endpoint) -> Result<(stasis_client::Client, Arc<AtomicU32>)> {
    let config =
        stasis_client::Config::new(&endpoint.base_url(), endpoint.token().map(str::to_owned))?;
    let retries = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&retries);
    // `STASIS_BENCH_RETRIES=1` prints each retry and its cause on stderr.
    let trace = std::env::var_os("STASIS_BENCH_RETRIES").is_some();
    let client = stasis_client::Client::new(config).on_retry(move |notice| {
        counted.fetch_add(1, Ordering::Relaxed);
        if trace {
            eprintln!(
                "    retry {} of {} after {:?}: {}",
                notice.attempt, notice.what, notice.delay, notice.error
            );
        }
    });
    Ok((client, retries))
}
