//! The paragraphs under the edge table: what a request to the edge costs,
//! and what the CPU figures say about the rows where the host's advantage
//! is smallest.

use super::{EdgeRow, SEVERAL, per_op::PerOp};
use crate::{
    cpu::CpuUse,
    report::{Figure, millis},
    results::Work,
};
use std::{fmt::Write as _, time::Duration};

/// How many of the rows with the smallest advantage are explained under
/// the table, whether or not they fall below [`SEVERAL`].
const CLOSEST: usize = 3;

/// A process busy for at least this share of one core was busy for most
/// of the workload.
const BUSY: f64 = 75.0;

/// The paragraph under the table: what a request to the edge costs, then
/// the rows where the host's advantage is smallest (every row below
/// [`SEVERAL`], and at least [`CLOSEST`]), with what the CPU figures of that
/// run say about each.
pub fn explanations(rows: &[EdgeRow]) -> String {
    let mut out = String::new();
    if let Some((host, edge)) = rows
        .iter()
        .find(|row| row.work == Some(Work::Healthz))
        .and_then(EdgeRow::per_op)
    {
        let _ = writeln!(
            out,
            "Every request to the edge crosses wrangler's dev server. On `GET /healthz` (no \
             storage) a request cost the worker's workerd {} of CPU and wrangler's proxy \
             workerd and node {} more, against {} in the host process (the client: {} per edge \
             request, {} per host request). Rows made of many small requests therefore show the \
             largest ratios; rows made of few large requests show the worker's own work.\n",
            ms(edge.main),
            ms(edge.rest),
            ms(host.main),
            ms(edge.client),
            ms(host.client),
        );
    }
    let mut ranked: Vec<(f64, &EdgeRow)> = rows
        .iter()
        .filter(|row| row.work != Some(Work::Healthz))
        .filter_map(|row| Some((row.advantage()?, row)))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    let below = ranked.iter().filter(|(a, _)| *a < SEVERAL).count();
    if ranked.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "**Rows where the host is not {SEVERAL:.0}× faster:** {}. The {} rows where its \
         advantage is smallest, with what this run measured:\n",
        if below == 0 {
            "none in this run".to_owned()
        } else {
            below.to_string()
        },
        below.max(CLOSEST).min(ranked.len())
    );
    for (advantage, row) in ranked.iter().take(below.max(CLOSEST)) {
        let flag = if *advantage < SEVERAL {
            " **not several times faster**"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- *{}*: {advantage:.1}×{flag}. {}",
            row.workload,
            reading(row)
        );
    }
    out
}

/// What the CPU figures of one row say.
pub(super) fn reading(row: &EdgeRow) -> String {
    let (Some(host), Some(edge), Some((host_op, edge_op)), Some(per)) =
        (&row.cpu.0, &row.cpu.1, row.per_op(), row.per)
    else {
        return "No CPU figures were taken for both sides' servers.".to_owned();
    };
    let mut said = vec![
        edge_reading(edge, &edge_op, &host_op, per.unit),
        host_reading(&row.host, host, &host_op, per.unit),
    ];
    let queued = edge.waited.as_secs_f64() / edge.wall.as_secs_f64().max(1e-9);
    if queued >= 0.5 {
        said.push(format!(
            "on average {queued:.1} of the edge's threads were ready but waiting for a core"
        ));
    }
    for (side, cpu) in [("host", host), ("edge", edge)] {
        if cpu.client_percent() >= BUSY {
            said.push(format!(
                "the single-threaded client was busy {:.0}% during the {side} run, so that \
                 figure is a floor",
                cpu.client_percent()
            ));
        }
    }
    let mut text = said.join("; ");
    text.push('.');
    text
}

/// Where the edge's CPU went per operation: the worker's own workerd, or
/// wrangler's dev server around it.
fn edge_reading(edge: &CpuUse, edge_op: &PerOp, host_op: &PerOp, unit: &str) -> String {
    let workerd = edge.role_percent("workerd").unwrap_or(0.0);
    if edge_op.main < edge_op.rest {
        return format!(
            "Per {unit}, most of the edge's CPU was wrangler's dev server (proxy workerd and \
             node {}, the worker's workerd {}), against {} in the host process",
            ms(edge_op.rest),
            ms(edge_op.main),
            ms(host_op.main)
        );
    }
    let mut line = format!(
        "Per {unit}, most of the edge's CPU was the worker's own workerd ({}, busy {workerd:.0}% \
         of the run; wrangler's proxy workerd and node {})",
        ms(edge_op.main),
        ms(edge_op.rest)
    );
    if !host_op.main.is_zero() {
        let _ = write!(
            line,
            ": the worker's own work (its wasm and its Durable Object's SQL) cost {:.1}× the \
             host process's {}",
            edge_op.main.as_secs_f64() / host_op.main.as_secs_f64(),
            ms(host_op.main)
        );
    }
    line
}

/// Whether the host's figure is its own CPU work: for a latency, how much of
/// the median it ran; for a rate, how busy it was and whether it waited for
/// a core.
fn host_reading(figure: &Figure, host: &CpuUse, host_op: &PerOp, unit: &str) -> String {
    let stasis = host.role_percent("stasis").unwrap_or(0.0);
    let host_queued = host.waited.as_secs_f64() / host.wall.as_secs_f64().max(1e-9);
    match figure {
        Figure::Latency(l) if !l.median.is_zero() => {
            let running = host_op.main.as_secs_f64() / l.median.as_secs_f64();
            let verdict = if running >= 0.75 {
                "so the host's figure is its own CPU work"
            } else {
                "so for the rest of the time the host process was not running (waiting on I/O, \
                 a core or the client)"
            };
            format!(
                "the host process spent {} of CPU per {unit} against its median of {}, {verdict}",
                ms(host_op.main),
                millis(l.median)
            )
        }
        _ if stasis < BUSY && host_queued >= 0.5 => format!(
            "the host process was busy only {stasis:.0}% of a core while on average \
             {host_queued:.1} of its threads were ready but waiting for one: the machine was \
             short of cores, not the host of work"
        ),
        _ if stasis >= BUSY => format!(
            "the host process was busy {stasis:.0}% of a core, so the host's figure is bound by \
             its CPU"
        ),
        _ => format!(
            "the host process was busy only {stasis:.0}% of a core, so its figure was not bound \
             by its CPU: the rest of the time it was not running (waiting on I/O or the client)"
        ),
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else {
        millis(d)
    }
}
