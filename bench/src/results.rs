//! What a run measured: every figure, or why it is missing.

use crate::{
    cpu::CpuUse,
    stats::{Latency, Rate},
    workloads::{
        conversation::Rebuilds, delta::DeltaPushes, memory::PeakRss, push::Pushes,
        recovery::Recoveries, restore::Pulls, snapshot::RoundTrips, startup::Starts,
        summaries::SummaryDispatches,
    },
};
use std::collections::BTreeMap;

/// Why a figure is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The workload ran and failed, with the error.
    Failed(String),
    /// The workload was not run in this configuration, and why.
    Skipped(String),
}

/// A figure, or why there is none.
pub type Measured<T> = Result<T, Missing>;

/// The four workloads run on both stasis and the peer: one item per
/// request or 100, on 1 connection or 16.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// 1 item per request, 1 connection.
    pub single_c1: Measured<Rate>,
    /// 1 item per request, 16 connections.
    pub single_c16: Measured<Rate>,
    /// 100 items per request, 1 connection.
    pub batch_c1: Measured<Rate>,
    /// 100 items per request, 16 connections.
    pub batch_c16: Measured<Rate>,
}

impl Comparison {
    /// Every workload missing for the same reason.
    pub fn missing(why: &Missing) -> Self {
        Self {
            single_c1: Err(why.clone()),
            single_c16: Err(why.clone()),
            batch_c1: Err(why.clone()),
            batch_c16: Err(why.clone()),
        }
    }
}

/// Which stasis runtime a figure is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// The local host (`stasis serve`), spawned or given by `--url`.
    Host,
    /// The edge worker under `wrangler dev --local` (`--edge-url`).
    Edge,
}

impl Side {
    /// How progress lines name it.
    pub fn name(self) -> &'static str {
        match self {
            Side::Host => "stasis",
            Side::Edge => "edge",
        }
    }
}

/// The workloads run on both runtimes, for the edge table and its CPU
/// accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// 100-event batches, 16 connections, 16 agents.
    Batches16,
    /// 100-event batches, 16 connections, 1 agent.
    Batches1,
    /// Single appends at concurrency 1.
    Latency,
    /// Catch-up read of 10,000 small events.
    ReadSmall,
    /// Catch-up read of 10,000 large events.
    ReadLarge,
    /// SSE append-to-delivery.
    Sse,
    /// 1000 B messages, 1 per request, 1 connection.
    SingleC1,
    /// 1000 B messages, 1 per request, 16 connections.
    SingleC16,
    /// 1000 B messages, 100 per request, 1 connection.
    BatchC1,
    /// 1000 B messages, 100 per request, 16 connections.
    BatchC16,
    /// `GET /healthz` at concurrency 1: the request path alone.
    Healthz,
    /// Snapshot PUT then GET of 24 MiB.
    SnapshotRoundTrip,
    /// `snapshot push` of a live database.
    Push,
    /// `GET /conversation` of 10,000 streamed events.
    Conversation,
    /// A new container's heartbeat and hydration.
    Recovery,
}

/// The snapshot, conversation and recovery figures of one runtime.
#[derive(Debug, Clone)]
pub struct StateFigures {
    /// Snapshot PUT then GET of 24 MiB.
    pub round_trips: Measured<RoundTrips>,
    /// `snapshot push` of a live database.
    pub push: Measured<Pushes>,
    /// A raw PUT of as many bytes as the push uploaded (its baseline).
    pub push_raw: Measured<Latency>,
    /// The delta push after one turn, and the whole-file push of the same database.
    pub delta: Measured<DeltaPushes>,
    /// Pull (restore) of the live database (about 25 MB), and its native baseline.
    pub pull_small: Measured<Pulls>,
    /// Pull (restore) of a database of about 100 MB, and its native baseline.
    pub pull_large: Measured<Pulls>,
    /// `GET /conversation` of 10,000 streamed events.
    pub conversation: Measured<Rebuilds>,
    /// `GET /events` of the same events (its baseline).
    pub conversation_read: Measured<Latency>,
    /// First heartbeat to every kilo.db verified and the Mayor's dispatch.
    pub recovery: Measured<Recoveries>,
}

impl StateFigures {
    /// Every figure missing for the same reason.
    pub fn missing(why: &Missing) -> Self {
        Self {
            round_trips: Err(why.clone()),
            push: Err(why.clone()),
            push_raw: Err(why.clone()),
            delta: Err(why.clone()),
            pull_small: Err(why.clone()),
            pull_large: Err(why.clone()),
            conversation: Err(why.clone()),
            conversation_read: Err(why.clone()),
            recovery: Err(why.clone()),
        }
    }
}

/// The edge's figures: the workloads of the event-log table that apply to
/// `wrangler dev`, plus the request-path probe.
#[derive(Debug, Clone)]
pub struct EdgeFigures {
    /// 100-event batches, 16 connections, 16 agents.
    pub batches_16_agents: Measured<Rate>,
    /// 100-event batches, 16 connections, 1 agent.
    pub batches_1_agent: Measured<Rate>,
    /// Single appends at concurrency 1.
    pub latency: Measured<Latency>,
    /// Catch-up of 10,000 small events.
    pub read_small: Measured<Latency>,
    /// Catch-up of 10,000 large events.
    pub read_large: Measured<Latency>,
    /// SSE append-to-delivery.
    pub sse: Measured<Latency>,
    /// `GET /healthz` at concurrency 1.
    pub healthz: Measured<Latency>,
    /// The 1000 B message workloads.
    pub comparison: Comparison,
    /// Snapshots, `snapshot push`, the conversation rebuild, recovery.
    pub state: StateFigures,
}

impl EdgeFigures {
    /// Every figure missing for the same reason.
    pub fn missing(why: &Missing) -> Self {
        Self {
            batches_16_agents: Err(why.clone()),
            batches_1_agent: Err(why.clone()),
            latency: Err(why.clone()),
            read_small: Err(why.clone()),
            read_large: Err(why.clone()),
            sse: Err(why.clone()),
            healthz: Err(why.clone()),
            comparison: Comparison::missing(why),
            state: StateFigures::missing(why),
        }
    }
}

/// Every figure of a run. Baselines and peer figures are taken right beside
/// the stasis figure they are compared with.
#[derive(Debug, Clone)]
pub struct Results {
    /// stasis: 100-event batches, 16 connections, 16 agents.
    pub batches_16_agents: Measured<Rate>,
    /// native: 100-row transactions, 16 files, 16 threads.
    pub native_inserts_16: Measured<Rate>,
    /// stasis: 100-event batches, 16 connections, 1 agent.
    pub batches_1_agent: Measured<Rate>,
    /// native: 100-row transactions, 1 file.
    pub native_inserts_1: Measured<Rate>,
    /// stasis: single appends, `--durability fsync`.
    pub latency_fsync: Measured<Latency>,
    /// native: `write` + `fdatasync` of 100 bytes.
    pub native_fdatasync: Measured<Latency>,
    /// native: one-row commit, `synchronous=FULL`.
    pub native_commit_fsync: Measured<Latency>,
    /// stasis: single appends, `--durability os`.
    pub latency_os: Measured<Latency>,
    /// native: one-row commit, `synchronous=NORMAL`.
    pub native_commit_os: Measured<Latency>,
    /// stasis: catch-up of 10,000 small events.
    pub read_small: Measured<Latency>,
    /// peer: the same.
    pub peer_read_small: Measured<Latency>,
    /// stasis: catch-up of 10,000 large events.
    pub read_large: Measured<Latency>,
    /// peer: the same.
    pub peer_read_large: Measured<Latency>,
    /// stasis: SSE append-to-delivery.
    pub sse: Measured<Latency>,
    /// peer: the same.
    pub peer_sse: Measured<Latency>,
    /// stasis: host starts.
    pub starts: Measured<Starts>,
    /// stasis: the peer comparison.
    pub comparison: Comparison,
    /// peer: the peer comparison.
    pub peer_comparison: Comparison,
    /// stasis: `GET /healthz` at concurrency 1 (for the edge table).
    pub host_healthz: Measured<Latency>,
    /// stasis: snapshots, `snapshot push`, the conversation rebuild and
    /// recovery.
    pub state: StateFigures,
    /// native: the snapshot's bytes written, fsynced and read back.
    pub native_round_trip: Measured<Latency>,
    /// native: the same with two sha256s of the bytes.
    pub native_round_trip_hashed: Measured<Latency>,
    /// stasis: peak memory of a fresh host during one 25 MiB PUT.
    pub peak_rss: Measured<PeakRss>,
    /// stasis: the Mayor's dispatch with a current cached summary, and
    /// without a summariser (host only).
    pub summary_dispatch: Measured<SummaryDispatches>,
    /// The edge's figures (all skipped without `--edge-url`).
    pub edge: EdgeFigures,
    /// CPU time per process during each workload run on both runtimes.
    pub cpu: BTreeMap<(Side, Work), CpuUse>,
}

impl Results {
    /// A run where nothing has been measured yet.
    pub fn not_run() -> Self {
        fn e<T>() -> Measured<T> {
            Err(Missing::Skipped("not run".to_owned()))
        }
        Self {
            batches_16_agents: e(),
            native_inserts_16: e(),
            batches_1_agent: e(),
            native_inserts_1: e(),
            latency_fsync: e(),
            native_fdatasync: e(),
            native_commit_fsync: e(),
            latency_os: e(),
            native_commit_os: e(),
            read_small: e(),
            peer_read_small: e(),
            read_large: e(),
            peer_read_large: e(),
            sse: e(),
            peer_sse: e(),
            starts: e(),
            comparison: Comparison::missing(&Missing::Skipped("not run".to_owned())),
            peer_comparison: Comparison::missing(&Missing::Skipped("not run".to_owned())),
            host_healthz: e(),
            state: StateFigures::missing(&Missing::Skipped("not run".to_owned())),
            native_round_trip: e(),
            native_round_trip_hashed: e(),
            peak_rss: e(),
            summary_dispatch: e(),
            edge: EdgeFigures::missing(&Missing::Skipped("not run".to_owned())),
            cpu: BTreeMap::new(),
        }
    }
}
