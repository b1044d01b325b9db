//! The bounds of every loop in a run: full, or shrunk by `--quick`.

use crate::workloads::{Bounds, memory, push, recovery};

/// Bounds for every loop; `--quick` shrinks them.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// 100-event batches, 16 connections.
    pub throughput: Bounds,
    /// The native batched inserts.
    pub native_throughput: Bounds,
    /// Single appends at concurrency 1.
    pub latency: Bounds,
    /// fdatasync and one-row commits.
    pub native_latency: Bounds,
    /// Catch-up reads.
    pub reads: Bounds,
    /// SSE deliveries.
    pub sse: Bounds,
    /// Host starts.
    pub starts: Bounds,
    /// Peer comparison, one item per request.
    pub single: Bounds,
    /// Peer comparison, 100 items per request.
    pub batches: Bounds,
    /// `GET /healthz` round trips.
    pub healthz: Bounds,
    /// Snapshot PUT + GET rounds.
    pub round_trips: Bounds,
    /// The native write + fsync + read rounds.
    pub native_snapshot: Bounds,
    /// `snapshot push` rounds.
    pub pushes: Bounds,
    /// Bytes of the live database pushed.
    pub push_db_bytes: u64,
    /// Delta push rounds (each with its whole-file push).
    pub deltas: Bounds,
    /// Pull rounds of each size.
    pub pulls: Bounds,
    /// Bytes of the large database pulled.
    pub pull_large_bytes: u64,
    /// Bytes PUT and GET while the host's peak memory is read.
    pub rss_bytes: usize,
    /// Conversation rebuild rounds.
    pub rebuilds: Bounds,
    /// Recoveries.
    pub recoveries: Bounds,
    /// Bytes of each agent's kilo.db in a recovery.
    pub recovery_bytes: usize,
    /// Dispatches on each host, with a cached summary and without.
    pub summary_dispatches: Bounds,
}

impl Budget {
    /// The bounds for a full or a quick run.
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                throughput: Bounds::new(300, 1),
                native_throughput: Bounds::new(300, 1),
                latency: Bounds::new(200, 1),
                native_latency: Bounds::new(200, 1),
                reads: Bounds::new(5, 2),
                sse: Bounds::new(40, 2),
                starts: Bounds::new(2, 10),
                single: Bounds::new(300, 1),
                batches: Bounds::new(100, 1),
                healthz: Bounds::new(2000, 1),
                round_trips: Bounds::new(2, 20),
                native_snapshot: Bounds::new(2, 10),
                pushes: Bounds::new(2, 20),
                push_db_bytes: 5_000_000,
                deltas: Bounds::new(2, 30),
                pulls: Bounds::new(2, 30),
                pull_large_bytes: 10_000_000,
                rss_bytes: memory::QUICK,
                rebuilds: Bounds::new(3, 10),
                recoveries: Bounds::new(1, 60),
                recovery_bytes: 4_000_000,
                summary_dispatches: Bounds::new(10, 10),
            }
        } else {
            Self {
                throughput: Bounds::new(4000, 8),
                native_throughput: Bounds::new(4000, 5),
                latency: Bounds::new(2000, 6),
                native_latency: Bounds::new(2000, 3),
                reads: Bounds::new(30, 10),
                sse: Bounds::new(300, 10),
                starts: Bounds::new(7, 60),
                single: Bounds::new(3000, 5),
                batches: Bounds::new(1000, 5),
                healthz: Bounds::new(20_000, 3),
                round_trips: Bounds::new(5, 60),
                native_snapshot: Bounds::new(5, 30),
                pushes: Bounds::new(5, 60),
                push_db_bytes: push::DB_BYTES,
                deltas: Bounds::new(5, 90),
                pulls: Bounds::new(5, 120),
                pull_large_bytes: 100_000_000,
                rss_bytes: memory::LARGEST,
                rebuilds: Bounds::new(10, 30),
                recoveries: Bounds::new(3, 120),
                recovery_bytes: recovery::SNAPSHOT_BYTES,
                summary_dispatches: Bounds::new(200, 60),
            }
        }
    }
}
