//! The table's rows: each measured figure beside its baseline, with the
//! target it answers to.

use crate::{
    report::{Figure, Goal, Row},
    results::{Comparison, Measured, Results},
    stats::Rate,
};
use stasis_domain::limits::DEFAULT_MAX_EVENTS;
use std::time::Duration;

/// Picks one workload's figure out of a [`Comparison`].
type PickRate = fn(&Comparison) -> &Measured<Rate>;

/// The rows for `r`, in the order of the brief: throughput, append latency,
/// catch-up, live delivery, start, then the peer comparison.
pub fn rows(r: &Results) -> Vec<Row> {
    let row = |workload: &str, stasis: Figure, baseline_name: &str, baseline: Figure| Row {
        workload: workload.to_owned(),
        stasis,
        stasis_note: None,
        baseline_name: baseline_name.to_owned(),
        baseline: Some(baseline),
        goals: Vec::new(),
    };
    let throughput_goals = vec![Goal::MinRate(150_000.0, "ev/s"), Goal::MinRatio(0.3)];
    let mut rows = vec![
        Row {
            goals: throughput_goals.clone(),
            stasis_note: retention_note(&r.batches_16_agents, 16),
            ..row(
                "append, 100-event batches of 100 B, 16 conns → 16 agents",
                Figure::rate(&r.batches_16_agents, "ev/s"),
                "rusqlite, 16 WAL files × 16 threads, 1 tx/100 rows, fsync",
                Figure::rate(&r.native_inserts_16, "ev/s"),
            )
        },
        Row {
            goals: throughput_goals,
            stasis_note: retention_note(&r.batches_1_agent, 1),
            ..row(
                "append, 100-event batches of 100 B, 16 conns → 1 agent",
                Figure::rate(&r.batches_1_agent, "ev/s"),
                "rusqlite, 1 WAL file, 1 tx/100 rows, fsync",
                Figure::rate(&r.native_inserts_1, "ev/s"),
            )
        },
        row(
            "append 1 event (100 B), concurrency 1, `--durability fsync`",
            Figure::latency(&r.latency_fsync),
            "`write` + `fdatasync` of 100 B",
            Figure::latency(&r.native_fdatasync),
        ),
        row(
            "the same stasis figure, against an in-process commit",
            Figure::latency(&r.latency_fsync),
            "rusqlite 1-row commit, `synchronous=FULL`",
            Figure::latency(&r.native_commit_fsync),
        ),
        row(
            "append 1 event (100 B), concurrency 1, `--durability os`",
            Figure::latency(&r.latency_os),
            "rusqlite 1-row commit, `synchronous=NORMAL`",
            Figure::latency(&r.native_commit_os),
        ),
        Row {
            goals: vec![Goal::MaxMedian(Duration::from_millis(20))],
            ..row(
                "catch-up read of 10,000 events (100 B) from cursor 0",
                Figure::latency(&r.read_small),
                "peer, 10,000 messages",
                Figure::latency(&r.peer_read_small),
            )
        },
        row(
            "catch-up read of 10,000 events (1000 B) from cursor 0",
            Figure::latency(&r.read_large),
            "peer, 10,000 messages",
            Figure::latency(&r.peer_read_large),
        ),
        Row {
            goals: vec![Goal::MaxMedian(Duration::from_millis(2))],
            ..row(
                "SSE append-to-delivery, 1 event (100 B) at a time",
                Figure::latency(&r.sse),
                "peer, `live=sse`",
                Figure::latency(&r.peer_sse),
            )
        },
        start_row(r),
    ];
    let pairs: [(&str, u64, PickRate); 4] = [
        ("1 per request, 1 conn", 1, |c| &c.single_c1),
        ("1 per request, 16 conns", 16, |c| &c.single_c16),
        ("100 per request, 1 conn", 1, |c| &c.batch_c1),
        ("100 per request, 16 conns", 16, |c| &c.batch_c16),
    ];
    for (what, logs, pick) in pairs {
        rows.push(Row {
            stasis_note: retention_note(pick(&r.comparison), logs),
            ..row(
                &format!("append 1000 B messages, {what}"),
                Figure::rate(pick(&r.comparison), "msg/s"),
                "Durable Streams (file-backed)",
                Figure::rate(pick(&r.peer_comparison), "msg/s"),
            )
        });
    }
    rows
}

fn start_row(r: &Results) -> Row {
    let (stasis, stasis_note) = match &r.starts {
        Ok(s) => (
            Figure::Latency(s.first_read),
            Some(format!(
                "`/healthz` 200 at {:.1} ms",
                s.healthy.median.as_secs_f64() * 1000.0
            )),
        ),
        Err(missing) => (Figure::missing(missing), None),
    };
    Row {
        workload: "host start → first served events read, warm component cache".into(),
        stasis,
        stasis_note,
        baseline_name: "—".into(),
        baseline: None,
        goals: vec![Goal::MaxMedian(Duration::from_millis(300))],
    }
}

/// Says so when the appends spread over `logs` agents passed the default
/// retention, so that each append also deleted the oldest events.
fn retention_note(measured: &Measured<Rate>, logs: u64) -> Option<String> {
    let rate = measured.as_ref().ok()?;
    let per_log = rate.items / logs.max(1);
    (per_log > DEFAULT_MAX_EVENTS)
        .then(|| format!("retention active (~{}k events per agent)", per_log / 1000))
}
