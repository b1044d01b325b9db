//! The chunked-snapshot rows of the snapshots table: the delta push after
//! one turn against the whole-file push of the same database, and the pulls
//! against a native copy + fsync + sha256 of the same bytes.

use crate::{
    report::{Goal, Row, millis, pick, size},
    results::{Measured, StateFigures},
    workloads::{delta::DeltaPushes, push, restore::Pulls},
};

/// `sent 7 of 763 chunks, 224 KiB = 0.92 % of the file (request bodies with
/// the JSON: 1.31 %); ...`, then what any push must do here before it sends
/// anything (a local cost, whichever runtime it pushes to).
pub fn delta_note(d: &DeltaPushes) -> String {
    let mut note = format!(
        "sent {} of {} chunks, {} = {:.2} % of the file (request bodies with the JSON: {:.2} %)",
        d.sent.chunks_sent,
        d.sent.chunks_total,
        size(d.sent.bytes_sent),
        d.bytes_ratio() * 100.0,
        d.body_ratio() * 100.0
    );
    note.push_str(&format!(
        "; what any push does before it sends a byte, the consistent copy and the whole file's \
         sha256 (every manifest carries it), took {} = {:.2}× the whole-file push",
        millis(d.floor.median),
        d.floor_ratio()
    ));
    if d.retries > 0 {
        note.push_str(&format!("; **{} retried requests**", d.retries));
    }
    note
}

/// `fetched 763 of 763 chunks`, or the whole file.
pub fn pull_note(p: &Pulls) -> String {
    let mut note = p.fetched.summary();
    if p.retries > 0 {
        note.push_str(&format!("; **{} retried requests**", p.retries));
    }
    note
}

/// The rows: the delta push, then the two pulls.
pub fn host_rows(s: &StateFigures) -> Vec<Row> {
    let delta = s.delta.as_ref().ok();
    let mut rows = vec![Row {
        workload: format!(
            "`snapshot push` after one turn ({} rows rewritten) of a live {} SQLite database: \
             only the changed chunks",
            delta.map_or(push::TURN_ROWS, |d| d.turn_rows),
            delta.map_or_else(|| "~25 MB".to_owned(), |d| size(d.size))
        ),
        stasis: pick(&s.delta, |d| d.delta),
        stasis_note: delta.map(delta_note),
        baseline_name: "`snapshot push --whole-file` of the same database, same round".into(),
        baseline: Some(pick(&s.delta, |d| d.whole)),
        goals: vec![Goal::MaxRatio(0.25)],
    }];
    for pulled in [&s.pull_small, &s.pull_large] {
        rows.push(pull_row(pulled));
    }
    rows
}

fn pull_row(pulled: &Measured<Pulls>) -> Row {
    let p = pulled.as_ref().ok();
    Row {
        workload: format!(
            "`snapshot pull` (restore) of a {} SQLite database, no chunk cache: the manifest, \
             then the whole file in one GET (each chunk checked by the server, the whole by the \
             client), `quick_check`, fsync, rename",
            p.map_or_else(|| "—".to_owned(), |p| size(p.size))
        ),
        stasis: pick(pulled, |p| p.pull),
        stasis_note: p.map(pull_note),
        baseline_name: "native copy of the same file + `fsync` + sha256".into(),
        baseline: Some(pick(pulled, |p| p.native)),
        goals: vec![Goal::MaxRatio(2.0)],
    }
}
