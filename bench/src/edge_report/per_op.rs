//! What one operation of each workload is, and the CPU time per operation
//! on each side.

use super::EdgeRow;
use crate::{
    cpu::CpuUse,
    plan::CONNS,
    report::Figure,
    results::Work,
    workloads::{latency, sse},
};
use std::time::Duration;

/// One operation of a workload: a request of `batch` items (rates), or one
/// sample (latencies).
#[derive(Debug, Clone, Copy)]
pub struct Per {
    /// What it is called: `request`, `read`, `delivery`.
    pub unit: &'static str,
    /// Items per request, for rates.
    pub batch: u64,
    /// Operations the workload runs before it counts (warm-ups, the checked
    /// first read): inside its CPU window, outside its figure.
    pub warm: u64,
}

/// What one operation of `work` is.
pub(super) fn per(work: Work) -> Per {
    let conns = CONNS as u64;
    let (unit, batch, warm) = match work {
        Work::Batches16 | Work::Batches1 | Work::BatchC16 => ("request", 100, conns),
        Work::BatchC1 => ("request", 100, 1),
        Work::SingleC1 => ("request", 1, 1),
        Work::SingleC16 => ("request", 1, conns),
        Work::ReadSmall | Work::ReadLarge => ("catch-up read", 1, 1),
        Work::Sse => ("append and its delivery", 1, sse::WARM_UP),
        Work::Latency | Work::Healthz => ("request", 1, latency::WARM_UP),
        Work::SnapshotRoundTrip => ("PUT + GET round", 1, 1),
        Work::Push => ("push", 1, 1),
        // The first, checked rebuild also reads the whole log once.
        Work::Conversation => ("rebuild", 1, 2),
        Work::Recovery => ("recovery (with its eviction and gap message)", 1, 0),
    };
    Per { unit, batch, warm }
}

impl EdgeRow {
    /// How many operations ran in the CPU window of `figure`'s workload:
    /// those it counted and its warm-ups.
    fn ops(&self, figure: &Figure) -> Option<u64> {
        let per = self.per?;
        let ops = match figure {
            Figure::Rate(rate, _) => rate.items / per.batch.max(1),
            Figure::Latency(l) => u64::try_from(l.samples).ok()?,
            _ => return None,
        };
        (ops > 0).then_some(ops + per.warm)
    }

    /// CPU time per operation on each side: `(host, edge)`.
    pub(super) fn per_op(&self) -> Option<(PerOp, PerOp)> {
        let per_op = |cpu: &Option<CpuUse>, figure: &Figure, main: &str| {
            // Without the server's processes (`--url`, or no `--edge-pgid`)
            // only the client was measured: nothing to divide.
            let cpu = cpu.as_ref().filter(|cpu| !cpu.servers.is_empty())?;
            let ops = u32::try_from(self.ops(figure)?).ok()?;
            Some(PerOp {
                main: cpu.role(main) / ops,
                rest: cpu.others(main) / ops,
                client: cpu.client / ops,
            })
        };
        Some((
            per_op(&self.cpu.0, &self.host, "stasis")?,
            per_op(&self.cpu.1, &self.edge, "workerd")?,
        ))
    }
}

/// CPU time per operation on one side.
#[derive(Debug, Clone, Copy)]
pub(super) struct PerOp {
    /// The process doing the work: the host's, or the worker's workerd.
    pub(super) main: Duration,
    /// The other server processes (wrangler's proxy workerd and node).
    pub(super) rest: Duration,
    /// The bench.
    pub(super) client: Duration,
}
