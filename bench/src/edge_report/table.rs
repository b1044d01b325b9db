//! One line of the edge table, its cells, and the markdown table of them.

use super::per_op::Per;
use crate::{cpu::CpuUse, report::Figure, results::Work};
use std::fmt::Write as _;

/// One line of the edge table.
#[derive(Debug, Clone)]
pub struct EdgeRow {
    /// What was measured.
    pub workload: String,
    /// Which workload it is, for its CPU figures.
    pub work: Option<Work>,
    /// The host's figure.
    pub host: Figure,
    /// The edge's figure.
    pub edge: Figure,
    /// What one operation of the workload is, to divide CPU time by.
    pub per: Option<Per>,
    /// What else to say (retention, why a side was not run).
    pub note: Vec<String>,
    /// CPU per process on the host's side, then on the edge's.
    pub cpu: (Option<CpuUse>, Option<CpuUse>),
}

impl EdgeRow {
    /// How many times faster the host is: host ÷ edge for rates, edge ÷
    /// host for latencies (so above 1 always means the host is faster).
    pub fn advantage(&self) -> Option<f64> {
        match (&self.host, &self.edge) {
            (Figure::Rate(h, _), Figure::Rate(e, _)) if e.per_sec() > 0.0 => {
                Some(h.per_sec() / e.per_sec())
            }
            (Figure::Latency(h), Figure::Latency(e)) if !h.median.is_zero() => {
                Some(e.median.as_secs_f64() / h.median.as_secs_f64())
            }
            _ => None,
        }
    }

    pub(super) fn ratio_cell(&self) -> String {
        match (self.advantage(), &self.host) {
            (Some(r), Figure::Rate(..)) => format!("{r:.1}× (host ÷ edge, rate)"),
            (Some(r), _) => format!("{r:.1}× (edge ÷ host, latency)"),
            (None, _) => "—".to_owned(),
        }
    }

    fn note_cell(&self) -> String {
        let mut parts = self.note.clone();
        if self.cpu.0.is_some() || self.cpu.1.is_some() {
            let side = |cpu: &Option<CpuUse>| cpu.as_ref().map_or("—".to_owned(), CpuUse::summary);
            parts.push(format!(
                "CPU, % of one core: host {}; edge {}",
                side(&self.cpu.0),
                side(&self.cpu.1)
            ));
        }
        if parts.is_empty() {
            "—".to_owned()
        } else {
            parts.join("; ")
        }
    }

    /// True when a workload of this row failed.
    pub fn failed(&self) -> bool {
        self.host.is_failure() || self.edge.is_failure()
    }
}

/// The markdown table of `rows`.
pub fn table(rows: &[EdgeRow]) -> String {
    let mut out = String::from(
        "| workload | host | edge (wrangler dev --local) | host ÷ edge (rates) / edge ÷ host (latencies) | note |\n\
         |---|---|---|---|---|\n",
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.workload,
            row.host.cell(),
            row.edge.cell(),
            row.ratio_cell(),
            row.note_cell()
        );
    }
    out
}
