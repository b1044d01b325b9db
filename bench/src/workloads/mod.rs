//! The workloads, each against any [`Log`](crate::logs::Log) on any
//! [`Endpoint`](crate::client::Endpoint): stasis (spawned or given by URL)
//! or the peer.

pub mod catchup;
pub mod latency;
pub mod sse;
pub mod startup;
pub mod throughput;

use std::time::Duration;

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
