//! The rows of the edge table, from the figures of a run.

use super::{EdgeRow, per_op::per, state_rows::state_rows};
use crate::{
    report::Figure,
    results::{Comparison, Measured, Results, Side, Work},
    stats::Rate,
};
use stasis_domain::limits::DEFAULT_MAX_EVENTS;

/// Picks one workload's figure out of a [`Comparison`].
type PickRate = fn(&Comparison) -> &Measured<Rate>;

/// The rows of the edge table, in the order of the event-log table.
pub fn rows(r: &Results) -> Vec<EdgeRow> {
    let b = Builder { r };
    let mut rows = b.appends();
    rows.extend(b.reads_and_start());
    rows.extend(b.messages());
    rows.extend(state_rows(&r.state, &r.edge.state, |w, work, h, e| {
        b.row(w, work, h, e)
    }));
    rows.extend(super::chunk_rows::chunk_rows(&r.state, &r.edge.state));
    rows.push(EdgeRow {
        note: vec!["no storage: the request path alone, for the explanation below".to_owned()],
        ..b.row(
            "`GET /healthz`, concurrency 1",
            Work::Healthz,
            Figure::latency(&r.host_healthz),
            Figure::latency(&r.edge.healthz),
        )
    });
    rows
}

/// Builds the rows of one run's figures.
struct Builder<'a> {
    r: &'a Results,
}

impl Builder<'_> {
    /// A row of a workload both sides ran, with each side's CPU.
    fn row(&self, workload: &str, work: Work, host: Figure, edge: Figure) -> EdgeRow {
        EdgeRow {
            workload: workload.to_owned(),
            work: Some(work),
            per: Some(per(work)),
            host,
            edge,
            note: Vec::new(),
            cpu: (
                self.r.cpu.get(&(Side::Host, work)).cloned(),
                self.r.cpu.get(&(Side::Edge, work)).cloned(),
            ),
        }
    }

    /// A rate row, with a note on each side whose appends passed retention.
    fn rate_row(
        &self,
        workload: &str,
        work: Work,
        (host, edge): (&Measured<Rate>, &Measured<Rate>),
        unit: &'static str,
        logs: u64,
    ) -> EdgeRow {
        let mut row = self.row(
            workload,
            work,
            Figure::rate(host, unit),
            Figure::rate(edge, unit),
        );
        for (side, measured) in [("host", host), ("edge", edge)] {
            if let Some(note) = retention(measured, logs) {
                row.note.push(format!("{side}: {note}"));
            }
        }
        row
    }

    /// The batched appends and the single-event latencies.
    fn appends(&self) -> Vec<EdgeRow> {
        let (r, e) = (self.r, &self.r.edge);
        vec![
            self.rate_row(
                "append, 100-event batches of 100 B, 16 conns → 16 agents",
                Work::Batches16,
                (&r.batches_16_agents, &e.batches_16_agents),
                "ev/s",
                16,
            ),
            self.rate_row(
                "append, 100-event batches of 100 B, 16 conns → 1 agent",
                Work::Batches1,
                (&r.batches_1_agent, &e.batches_1_agent),
                "ev/s",
                1,
            ),
            EdgeRow {
                note: vec![
                    "host `--durability fsync`; the edge's object storage also syncs each \
                     commit (see below)"
                        .to_owned(),
                ],
                ..self.row(
                    "append 1 event (100 B), concurrency 1",
                    Work::Latency,
                    Figure::latency(&r.latency_fsync),
                    Figure::latency(&e.latency),
                )
            },
            EdgeRow {
                workload: "append 1 event (100 B), concurrency 1, host `--durability os`"
                    .to_owned(),
                work: None,
                per: None,
                host: Figure::latency(&r.latency_os),
                edge: Figure::Skipped("does not apply".to_owned()),
                note: vec![
                    "`--durability` is a host flag; the worker cannot choose how workerd syncs \
                     its Durable Object storage"
                        .to_owned(),
                ],
                cpu: (None, None),
            },
        ]
    }

    /// The catch-up reads, live delivery and the host's start.
    fn reads_and_start(&self) -> Vec<EdgeRow> {
        let (r, e) = (self.r, &self.r.edge);
        vec![
            self.row(
                "catch-up read of 10,000 events (100 B) from cursor 0",
                Work::ReadSmall,
                Figure::latency(&r.read_small),
                Figure::latency(&e.read_small),
            ),
            self.row(
                "catch-up read of 10,000 events (1000 B) from cursor 0",
                Work::ReadLarge,
                Figure::latency(&r.read_large),
                Figure::latency(&e.read_large),
            ),
            self.row(
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
        ]
    }

    /// The 1000 B messages, as the peer's comparison sends them.
    fn messages(&self) -> Vec<EdgeRow> {
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
        pairs
            .into_iter()
            .map(|(what, work, logs, pick)| {
                self.rate_row(
                    &format!("append 1000 B messages, {what}"),
                    work,
                    (pick(&self.r.comparison), pick(&self.r.edge.comparison)),
                    "msg/s",
                    logs,
                )
            })
            .collect()
    }
}

/// Says so when the appends spread over `logs` agents passed the default
/// retention (both runtimes keep 10,000 events per agent by default).
fn retention(measured: &Measured<Rate>, logs: u64) -> Option<String> {
    let rate = measured.as_ref().ok()?;
    let per_log = rate.items / logs.max(1);
    (per_log > DEFAULT_MAX_EVENTS)
        .then(|| format!("retention active (~{}k events per agent)", per_log / 1000))
}
