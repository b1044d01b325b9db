//! The chunked-snapshot rows of the edge table: the delta push after one
//! turn and the pulls, each side's ratio to its own baseline in the note.

use super::EdgeRow;
use crate::{
    chunk_rows::{delta_note, pull_note},
    report::{Figure, pick, size},
    results::{Measured, StateFigures},
    stats::Latency,
};

/// `side: X× its baseline (what)` for a figure and its baseline.
fn ratio<T>(side: &str, m: &Measured<T>, f: impl Fn(&T) -> (Latency, Latency)) -> Option<String> {
    let (a, b) = f(m.as_ref().ok()?);
    let ratio = a.median.as_secs_f64() / b.median.as_secs_f64().max(1e-9);
    Some(format!("{side}: {ratio:.2}× its baseline"))
}

fn row(workload: String, host: Figure, edge: Figure) -> EdgeRow {
    EdgeRow {
        workload,
        work: None,
        host,
        edge,
        per: None,
        note: Vec::new(),
        cpu: (None, None),
    }
}

/// The delta push row, then the pull rows.
pub(super) fn chunk_rows(host: &StateFigures, edge: &StateFigures) -> Vec<EdgeRow> {
    let mut delta = row(
        "`snapshot push` after one turn: only the changed chunks (baseline: the whole-file \
         push of the same database)"
            .into(),
        pick(&host.delta, |d| d.delta),
        pick(&edge.delta, |d| d.delta),
    );
    for (side, m) in [("host", &host.delta), ("edge", &edge.delta)] {
        delta.note.extend(ratio(side, m, |d| (d.delta, d.whole)));
        if let Ok(d) = m {
            delta.note.push(format!("{side}: {}", delta_note(d)));
        }
    }
    let mut rows = vec![delta];
    for (h, e) in [
        (&host.pull_small, &edge.pull_small),
        (&host.pull_large, &edge.pull_large),
    ] {
        let bytes = h.as_ref().or(e.as_ref()).map_or(0, |p| p.size);
        let mut pull = row(
            format!(
                "`snapshot pull` of a {} SQLite database, no cache (baseline: native copy + \
                 fsync + sha256)",
                size(bytes)
            ),
            pick(h, |p| p.pull),
            pick(e, |p| p.pull),
        );
        for (side, m) in [("host", h), ("edge", e)] {
            pull.note.extend(ratio(side, m, |p| (p.pull, p.native)));
            if let Ok(p) = m {
                pull.note.push(format!("{side}: {}", pull_note(p)));
            }
        }
        rows.push(pull);
    }
    rows
}
