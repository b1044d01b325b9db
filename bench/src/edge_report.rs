//! The edge section of BENCHMARKS.md: the host and the edge worker under
//! `wrangler dev --local`, workload by workload, from the same run, with the
//! CPU time each side's processes used and why a row is close.

use crate::{
    cpu::CpuUse,
    plan::CONNS,
    report::{Figure, Marks, RunInfo, millis, size},
    results::{Comparison, Measured, Results, Side, StateFigures, Work},
    rows::pick,
    stats::{Latency, Rate},
    workloads::{latency, sse},
};
use stasis_domain::limits::DEFAULT_MAX_EVENTS;
use std::{fmt::Write as _, time::Duration};

/// Where the edge section starts and ends in BENCHMARKS.md.
pub const EDGE: Marks = Marks {
    start: "<!-- bench:edge:start -->",
    end: "<!-- bench:edge:end -->",
    before: None,
};

/// "Several times faster": a row where the host's advantage is below this
/// is flagged as not several times faster.
pub const SEVERAL: f64 = 3.0;

/// How many of the rows with the smallest advantage are explained under
/// the table, whether or not they fall below [`SEVERAL`].
const CLOSEST: usize = 3;

/// A process busy for at least this share of one core was busy for most
/// of the workload.
const BUSY: f64 = 75.0;

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

    fn ratio_cell(&self) -> String {
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
fn per(work: Work) -> Per {
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
    fn per_op(&self) -> Option<(PerOp, PerOp)> {
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
struct PerOp {
    /// The process doing the work: the host's, or the worker's workerd.
    main: Duration,
    /// The other server processes (wrangler's proxy workerd and node).
    rest: Duration,
    /// The bench.
    client: Duration,
}

/// Picks one workload's figure out of a [`Comparison`].
type PickRate = fn(&Comparison) -> &Measured<Rate>;

/// The rows of the edge table, in the order of the event-log table.
pub fn rows(r: &Results) -> Vec<EdgeRow> {
    let row = |workload: &str, work: Work, host: Figure, edge: Figure| EdgeRow {
        workload: workload.to_owned(),
        work: Some(work),
        per: Some(per(work)),
        host,
        edge,
        note: Vec::new(),
        cpu: (
            r.cpu.get(&(Side::Host, work)).cloned(),
            r.cpu.get(&(Side::Edge, work)).cloned(),
        ),
    };
    let with_retention = |mut row: EdgeRow, host: &Measured<Rate>, edge: &Measured<Rate>, logs| {
        for (side, measured) in [("host", host), ("edge", edge)] {
            if let Some(note) = retention(measured, logs) {
                row.note.push(format!("{side}: {note}"));
            }
        }
        row
    };
    let e = &r.edge;
    let mut rows = vec![
        with_retention(
            row(
                "append, 100-event batches of 100 B, 16 conns → 16 agents",
                Work::Batches16,
                Figure::rate(&r.batches_16_agents, "ev/s"),
                Figure::rate(&e.batches_16_agents, "ev/s"),
            ),
            &r.batches_16_agents,
            &e.batches_16_agents,
            16,
        ),
        with_retention(
            row(
                "append, 100-event batches of 100 B, 16 conns → 1 agent",
                Work::Batches1,
                Figure::rate(&r.batches_1_agent, "ev/s"),
                Figure::rate(&e.batches_1_agent, "ev/s"),
            ),
            &r.batches_1_agent,
            &e.batches_1_agent,
            1,
        ),
        EdgeRow {
            note: vec![
                "host `--durability fsync`; the edge's object storage also syncs each commit \
                 (see below)"
                    .to_owned(),
            ],
            ..row(
                "append 1 event (100 B), concurrency 1",
                Work::Latency,
                Figure::latency(&r.latency_fsync),
                Figure::latency(&e.latency),
            )
        },
        EdgeRow {
            workload: "append 1 event (100 B), concurrency 1, host `--durability os`".to_owned(),
            work: None,
            per: None,
            host: Figure::latency(&r.latency_os),
            edge: Figure::Skipped("does not apply".to_owned()),
            note: vec![
                "`--durability` is a host flag; the worker cannot choose how workerd syncs its \
                 Durable Object storage"
                    .to_owned(),
            ],
            cpu: (None, None),
        },
        row(
            "catch-up read of 10,000 events (100 B) from cursor 0",
            Work::ReadSmall,
            Figure::latency(&r.read_small),
            Figure::latency(&e.read_small),
        ),
        row(
            "catch-up read of 10,000 events (1000 B) from cursor 0",
            Work::ReadLarge,
            Figure::latency(&r.read_large),
            Figure::latency(&e.read_large),
        ),
        row(
            "SSE append-to-delivery, 1 event (100 B) at a time",
            Work::Sse,
            Figure::latency(&r.sse),
            Figure::latency(&e.sse),
        ),
        EdgeRow {
            workload: "host start → first served events read, warm component cache".to_owned(),
            work: None,
            per: None,
            host: match &r.starts {
                Ok(starts) => Figure::Latency(starts.first_read),
                Err(missing) => Figure::missing(missing),
            },
            edge: Figure::Skipped("does not apply".to_owned()),
            note: vec![
                "a host process start; `wrangler dev` starting is a dev tool bundling and \
                 launching workerd, not a figure of the runtime"
                    .to_owned(),
            ],
            cpu: (None, None),
        },
    ];
    let pairs: [(&str, Work, u64, PickRate); 4] = [
        ("1 per request, 1 conn", Work::SingleC1, 1, |c| &c.single_c1),
        ("1 per request, 16 conns", Work::SingleC16, 16, |c| {
            &c.single_c16
        }),
        ("100 per request, 1 conn", Work::BatchC1, 1, |c| &c.batch_c1),
        ("100 per request, 16 conns", Work::BatchC16, 16, |c| {
            &c.batch_c16
        }),
    ];
    for (what, work, logs, pick) in pairs {
        rows.push(with_retention(
            row(
                &format!("append 1000 B messages, {what}"),
                work,
                Figure::rate(pick(&r.comparison), "msg/s"),
                Figure::rate(pick(&e.comparison), "msg/s"),
            ),
            pick(&r.comparison),
            pick(&e.comparison),
            logs,
        ));
    }
    rows.extend(state_rows(&r.state, &e.state, row));
    rows.push(EdgeRow {
        note: vec!["no storage: the request path alone, for the explanation below".to_owned()],
        ..row(
            "`GET /healthz`, concurrency 1",
            Work::Healthz,
            Figure::latency(&r.host_healthz),
            Figure::latency(&e.healthz),
        )
    });
    rows
}

/// The snapshot, push, rebuild and recovery rows, each with the
/// secondary figure of both sides in its note.
fn state_rows(
    host: &StateFigures,
    edge: &StateFigures,
    row: impl Fn(&str, Work, Figure, Figure) -> EdgeRow,
) -> Vec<EdgeRow> {
    /// "what: host X; edge Y" for a secondary latency of both sides.
    fn both<T>(
        what: &str,
        host: &Measured<T>,
        edge: &Measured<T>,
        f: impl Fn(&T) -> Latency,
    ) -> Option<String> {
        let side = |m: &Measured<T>| {
            m.as_ref()
                .ok()
                .map_or("—".to_owned(), |t| millis(f(t).median))
        };
        (host.is_ok() || edge.is_ok())
            .then(|| format!("{what}: host {}, edge {}", side(host), side(edge)))
    }
    let bytes = host
        .round_trips
        .as_ref()
        .or(edge.round_trips.as_ref())
        .map_or(crate::workloads::snapshot::ROUND_TRIP_BYTES, |t| t.bytes);
    let mut round_trip = row(
        &format!("snapshot PUT then GET of {}", size(bytes as u64)),
        Work::SnapshotRoundTrip,
        pick(&host.round_trips, |t| t.total),
        pick(&edge.round_trips, |t| t.total),
    );
    round_trip
        .note
        .extend(both("PUT", &host.round_trips, &edge.round_trips, |t| t.put));
    round_trip
        .note
        .extend(both("GET", &host.round_trips, &edge.round_trips, |t| t.get));

    let mut push = row(
        "`snapshot push` (stasis-client) of a live SQLite database",
        Work::Push,
        pick(&host.push, |p| p.push),
        pick(&edge.push, |p| p.push),
    );
    if let Ok(p) = host.push.as_ref().or(edge.push.as_ref()) {
        push.workload = format!(
            "`snapshot push` (stasis-client) of a live {} SQLite database",
            size(p.size)
        );
    }
    push.note.extend(both(
        "raw PUT of the same bytes",
        &host.push_raw,
        &edge.push_raw,
        |l| *l,
    ));

    let mut rebuild = row(
        "`GET /conversation` of 10,000 streamed message events",
        Work::Conversation,
        pick(&host.conversation, |c| c.rebuild),
        pick(&edge.conversation, |c| c.rebuild),
    );
    rebuild.note.extend(both(
        "`GET /events` of the same events",
        &host.conversation_read,
        &edge.conversation_read,
        |l| *l,
    ));

    let mut recovery = row(
        "recovery: first heartbeat → 3 kilo.db downloaded and verified + the Mayor's dispatch",
        Work::Recovery,
        pick(&host.recovery, |c| c.recovery),
        pick(&edge.recovery, |c| c.recovery),
    );
    if let Ok(c) = host.recovery.as_ref().or(edge.recovery.as_ref()) {
        recovery.workload = format!(
            "recovery: first heartbeat → 3 kilo.db ({} each) downloaded and verified + the \
             Mayor's dispatch",
            size(c.bytes as u64)
        );
    }
    recovery.note.push(
        "aim under 2 s on the host; the issue's figures (not measured): 5–7 min today, target \
         6–10 s"
            .to_owned(),
    );
    recovery.note.extend(both(
        "the heartbeat alone",
        &host.recovery,
        &edge.recovery,
        |c| c.heartbeat,
    ));
    for (side, retries) in [
        ("host", host.recovery.as_ref().map_or(0, |c| c.retries)),
        ("edge", edge.recovery.as_ref().map_or(0, |c| c.retries)),
    ] {
        if retries > 0 {
            recovery
                .note
                .push(format!("{side}: **{retries} retried requests**"));
        }
    }
    vec![round_trip, push, rebuild, recovery]
}

/// Says so when the appends spread over `logs` agents passed the default
/// retention (both runtimes keep 10,000 events per agent by default).
fn retention(measured: &Measured<Rate>, logs: u64) -> Option<String> {
    let rate = measured.as_ref().ok()?;
    let per_log = rate.items / logs.max(1);
    (per_log > DEFAULT_MAX_EVENTS)
        .then(|| format!("retention active (~{}k events per agent)", per_log / 1000))
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

/// What the section says about the edge besides the common run facts.
#[derive(Debug, Clone)]
pub struct EdgeInfo {
    /// What ran the host side.
    pub host: String,
    /// What ran the edge side (URL, versions).
    pub edge: String,
}

/// How the numbers were taken, printed under the table.
const NOTES: &str = "\
- Both columns come from the same run: each edge workload runs right after the same host workload,
  with the same client, bounds and payloads (see the event-log section for how each is driven).
  Ratios are written so that above 1 means the host is faster: host ÷ edge for rates, edge ÷ host
  for latencies (medians).
- CPU columns read `/proc/PID/stat` before and after each workload (filling the log for a catch-up
  read is not counted): `stasis` is the host process; on the edge, `workerd` runs the worker and
  its Durable Objects, `proxy workerd` is wrangler's own proxy listening on the dev port, `node` is
  wrangler (it also prints a log line per request); `client` is the bench. 100% is one core; the
  machine has the cores stated above, shared by everything. \"Threads queued\" is the server's
  threads' run-queue time (`/proc/PID/task/TID/schedstat`) over the workload's wall time: how many
  of them were, on average, ready to run while no core was free.
- Durability: the host runs `--durability fsync`. workerd's local Durable Object storage also
  syncs each commit: `strace -f -c -e trace=fsync -p <workerd>` counted one `fsync` per
  single-event append (20 for 20) when this bench was written.
";

/// The BENCHMARKS.md edge section for `rows`.
pub fn section(info: &RunInfo, edge: &EdgeInfo, rows: &[EdgeRow]) -> String {
    let m = &info.machine;
    format!(
        "{}\n## Edge: the host against the edge worker under `wrangler dev --local`\n\n\
         - Machine: {} ({} cores), {} memory, Linux {}\n\
         - {}\n\
         - Date: {} (UTC)\n\
         - stasis commit: {}\n\
         - Command: {}\n\
         - Host: {}\n\
         - Edge: {}\n\n\
         {}\n{}\n{NOTES}{}\n",
        EDGE.start,
        m.cpu,
        m.cores,
        m.memory,
        m.kernel,
        info.load_line(),
        m.date,
        m.commit,
        info.command,
        edge.host,
        edge.edge,
        table(rows),
        explanations(rows),
        EDGE.end,
    )
}

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
fn reading(row: &EdgeRow) -> String {
    let (Some(host), Some(edge), Some((host_op, edge_op)), Some(per)) =
        (&row.cpu.0, &row.cpu.1, row.per_op(), row.per)
    else {
        return "No CPU figures were taken for both sides' servers.".to_owned();
    };
    let mut said = Vec::new();
    let workerd = edge.role_percent("workerd").unwrap_or(0.0);
    if edge_op.main >= edge_op.rest {
        let mut line = format!(
            "Per {}, most of the edge's CPU was the worker's own workerd ({}, busy {workerd:.0}% \
             of the run; wrangler's proxy workerd and node {})",
            per.unit,
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
        said.push(line);
    } else {
        said.push(format!(
            "Per {}, most of the edge's CPU was wrangler's dev server (proxy workerd and node {}, \
             the worker's workerd {}), against {} in the host process",
            per.unit,
            ms(edge_op.rest),
            ms(edge_op.main),
            ms(host_op.main)
        ));
    }
    let stasis = host.role_percent("stasis").unwrap_or(0.0);
    let host_queued = host.waited.as_secs_f64() / host.wall.as_secs_f64().max(1e-9);
    match &row.host {
        // A latency: how much of the median the host spent running.
        Figure::Latency(l) if !l.median.is_zero() => {
            let running = host_op.main.as_secs_f64() / l.median.as_secs_f64();
            let verdict = if running >= 0.75 {
                "so the host's figure is its own CPU work"
            } else {
                "so for the rest of the time the host process was not running (waiting on I/O, \
                 a core or the client)"
            };
            said.push(format!(
                "the host process spent {} of CPU per {} against its median of {}, {verdict}",
                ms(host_op.main),
                per.unit,
                millis(l.median)
            ));
        }
        // A rate: how busy the host was over the run.
        _ if stasis < BUSY && host_queued >= 0.5 => said.push(format!(
            "the host process was busy only {stasis:.0}% of a core while on average \
             {host_queued:.1} of its threads were ready but waiting for one: the machine was \
             short of cores, not the host of work"
        )),
        _ if stasis >= BUSY => said.push(format!(
            "the host process was busy {stasis:.0}% of a core, so the host's figure is bound by \
             its CPU"
        )),
        _ => said.push(format!(
            "the host process was busy only {stasis:.0}% of a core, so its figure was not bound \
             by its CPU: the rest of the time it was not running (waiting on I/O or the client)"
        )),
    }
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

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1.0 {
        format!("{ms:.3} ms")
    } else {
        millis(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Latency;
    use std::time::Duration;

    fn rate(items: u64) -> Figure {
        Figure::Rate(
            Rate {
                items,
                elapsed: Duration::from_secs(1),
            },
            "ev/s",
        )
    }

    fn latency(ms: u64) -> Figure {
        let d = Duration::from_millis(ms);
        Figure::Latency(Latency {
            median: d,
            p99: d,
            samples: 1,
        })
    }

    fn row(host: Figure, edge: Figure) -> EdgeRow {
        EdgeRow {
            workload: "w".into(),
            work: Some(Work::Batches16),
            per: None,
            host,
            edge,
            note: Vec::new(),
            cpu: (None, None),
        }
    }

    #[test]
    fn the_advantage_is_above_one_when_the_host_is_faster() {
        assert_eq!(row(rate(600), rate(100)).advantage(), Some(6.0));
        assert_eq!(row(latency(2), latency(10)).advantage(), Some(5.0));
        assert_eq!(
            row(latency(2), Figure::Skipped("x".into())).advantage(),
            None
        );
        assert_eq!(
            row(rate(600), rate(100)).ratio_cell(),
            "6.0× (host ÷ edge, rate)"
        );
        assert_eq!(
            row(latency(2), latency(10)).ratio_cell(),
            "5.0× (edge ÷ host, latency)"
        );
    }

    #[test]
    fn close_rows_are_flagged_and_the_closest_explained() {
        let rows = vec![row(rate(600), rate(100)), {
            let mut close = row(rate(200), rate(100));
            close.workload = "close".into();
            close
        }];
        let text = explanations(&rows);
        assert!(
            text.contains("*close*: 2.0× **not several times faster**"),
            "{text}"
        );
        assert!(text.contains("*w*: 6.0×. No CPU figures"), "{text}");
        assert!(text.contains("faster:** 1."), "{text}");
    }

    #[test]
    fn a_reading_names_where_each_side_spent_its_time() {
        let secs = Duration::from_secs;
        let cpu = |servers: Vec<(&'static str, Duration)>| CpuUse {
            wall: secs(10),
            servers,
            waited: Duration::ZERO,
            client: Duration::from_millis(100),
        };
        let mut read = row(latency(20), latency(100));
        read.workload = "read".into();
        read.work = Some(Work::ReadSmall);
        read.per = Some(per(Work::ReadSmall));
        // 99 timed reads + the checked first one = 100 operations per side.
        let samples = |ms| {
            Figure::Latency(Latency {
                median: Duration::from_millis(ms),
                p99: Duration::from_millis(ms),
                samples: 99,
            })
        };
        read.host = samples(20);
        read.edge = samples(100);
        read.cpu = (
            Some(cpu(vec![("stasis", Duration::from_millis(1900))])),
            Some(cpu(vec![
                ("workerd", Duration::from_millis(9500)),
                ("node", Duration::from_millis(500)),
            ])),
        );
        let text = reading(&read);
        assert!(
            text.contains("the worker's own workerd (95.0 ms, busy 95% of the run"),
            "{text}"
        );
        assert!(
            text.contains("cost 5.0× the host process's 19.0 ms"),
            "{text}"
        );
        assert!(text.contains("its own CPU work"), "{text}");
    }
}
