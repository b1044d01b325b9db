//! The table's rows: each measured figure beside its baseline, with the
//! target it answers to.

use crate::{
    report::{Figure, Goal, Row, millis, pick, size, thousands_sep},
    results::{Comparison, Measured, Results, StateFigures},
    stats::Rate,
    workloads::{conversation, recovery, snapshot, summaries},
};
use stasis_domain::limits::DEFAULT_MAX_EVENTS;
use std::time::Duration;

/// Picks one workload's figure out of a [`Comparison`].
type PickRate = fn(&Comparison) -> &Measured<Rate>;

/// The rows for `r`, in the order of the brief: throughput, append latency,
/// catch-up, live delivery, start, then the peer comparison.
pub fn rows(r: &Results) -> Vec<Row> {
    let mut rows = append_rows(r);
    rows.extend(read_rows(r));
    rows.push(start_row(r));
    rows.extend(message_rows(r));
    rows
}

/// A row without goals or a note.
fn row(workload: &str, stasis: Figure, baseline_name: &str, baseline: Figure) -> Row {
    Row {
        workload: workload.to_owned(),
        stasis,
        stasis_note: None,
        baseline_name: baseline_name.to_owned(),
        baseline: Some(baseline),
        goals: Vec::new(),
    }
}

/// Batched appends against native inserts, single appends against a bare
/// fdatasync and in-process commits.
fn append_rows(r: &Results) -> Vec<Row> {
    let throughput_goals = vec![Goal::MinRate(150_000.0, "ev/s"), Goal::MinRatio(0.3)];
    vec![
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
    ]
}

/// Catch-up reads and live delivery, against the peer.
fn read_rows(r: &Results) -> Vec<Row> {
    vec![
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
    ]
}

/// The 1000 B messages, against the peer.
fn message_rows(r: &Results) -> Vec<Row> {
    let pairs: [(&str, u64, PickRate); 4] = [
        ("1 per request, 1 conn", 1, |c| &c.single_c1),
        ("1 per request, 16 conns", 16, |c| &c.single_c16),
        ("100 per request, 1 conn", 1, |c| &c.batch_c1),
        ("100 per request, 16 conns", 16, |c| &c.batch_c16),
    ];
    pairs
        .into_iter()
        .map(|(what, logs, pick)| Row {
            stasis_note: retention_note(pick(&r.comparison), logs),
            ..row(
                &format!("append 1000 B messages, {what}"),
                Figure::rate(pick(&r.comparison), "msg/s"),
                "Durable Streams (file-backed)",
                Figure::rate(pick(&r.peer_comparison), "msg/s"),
            )
        })
        .collect()
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

/// The snapshots section's rows: snapshot round trip (against both native
/// baselines), peak memory, `snapshot push`, the chunked pushes and pulls,
/// conversation rebuild, recovery.
pub fn snapshot_rows(r: &Results) -> Vec<Row> {
    let s = &r.state;
    let mut rows = round_trip_rows(r);
    rows.push(peak_rss_row(r));
    rows.push(whole_push_row(s));
    rows.extend(crate::chunk_rows::host_rows(s));
    rows.push(conversation_row(s));
    rows.push(summary_dispatch_row(r));
    rows.push(recovery_row(s));
    rows
}

/// The 24 MiB PUT + GET, against the native round trip without and with
/// the two hashes.
fn round_trip_rows(r: &Results) -> Vec<Row> {
    let s = &r.state;
    let round_trips = s.round_trips.as_ref().ok();
    let bytes = round_trips.map_or(snapshot::ROUND_TRIP_BYTES, |t| t.bytes);
    let split =
        round_trips.map(|t| format!("PUT {}, GET {}", millis(t.put.median), millis(t.get.median)));
    let round_trip = pick(&s.round_trips, |t| t.total);
    vec![
        Row {
            workload: format!(
                "snapshot PUT then GET of {} (pseudo-random), one agent",
                size(bytes as u64)
            ),
            stasis: round_trip.clone(),
            stasis_note: split.clone(),
            baseline_name: "the same bytes: write a new file + `fsync` + read it back".into(),
            baseline: Some(Figure::latency(&r.native_round_trip)),
            goals: vec![Goal::MaxRatio(2.5)],
        },
        Row {
            workload: "the same stasis figure, against the hashing floor".into(),
            stasis: round_trip,
            stasis_note: split,
            baseline_name: "write + `fsync` + read + 2× sha256 of the bytes (`sha2` crate), \
                            as a PUT and a GET must hash"
                .into(),
            baseline: Some(Figure::latency(&r.native_round_trip_hashed)),
            goals: Vec::new(),
        },
    ]
}

/// The host's peak memory around the largest PUT and its GET.
fn peak_rss_row(r: &Results) -> Row {
    Row {
        workload: format!(
            "peak RSS of a fresh host during one {} snapshot PUT, then its GET",
            size(
                r.peak_rss
                    .as_ref()
                    .map_or(crate::workloads::memory::LARGEST, |m| m.body) as u64
            )
        ),
        stasis: Figure::memory(&r.peak_rss),
        stasis_note: None,
        baseline_name: "—".into(),
        baseline: None,
        // Split and assembled streaming: the peak must not grow with the body.
        goals: vec![Goal::MaxCopies(0.25)],
    }
}

/// `snapshot push --whole-file` of a live database, against a raw PUT.
fn whole_push_row(s: &StateFigures) -> Row {
    let push = s.push.as_ref().ok();
    Row {
        workload: format!(
            "`snapshot push --whole-file` (stasis-client) of a live {} SQLite database (WAL \
             mode, open, no writer)",
            push.map_or_else(|| "~20 MB".to_owned(), |p| size(p.size))
        ),
        stasis: pick(&s.push, |p| p.push),
        stasis_note: push.map(|p| {
            let mut note = format!(
                "{} on disk with its WAL; the local copy + hashes alone {}",
                size(p.db_bytes),
                millis(p.local.median)
            );
            if p.retries > 0 {
                note.push_str(&format!("; **{} retried requests**", p.retries));
            }
            note
        }),
        baseline_name: format!(
            "a raw PUT of the same {} by the bench's client",
            push.map_or_else(|| "bytes".to_owned(), |p| size(p.size))
        ),
        baseline: Some(Figure::latency(&s.push_raw)),
        goals: Vec::new(),
    }
}

/// The conversation rebuilt by the server, against a plain read.
fn conversation_row(s: &StateFigures) -> Row {
    let rebuild = s.conversation.as_ref().ok();
    Row {
        workload: format!(
            "`GET /conversation?max_turns=1000&max_tokens=1000000` of {} streamed message events{}",
            thousands_sep(rebuild.map_or(conversation::EVENTS, |c| c.events)),
            rebuild.map_or_else(String::new, |c| format!(" → {} turns", c.turns))
        ),
        stasis: pick(&s.conversation, |c| c.rebuild),
        stasis_note: rebuild.map(|c| {
            format!(
                "the same rebuild in-process (`stasis_domain`) {}",
                millis(c.in_process.median)
            )
        }),
        baseline_name: "`GET /events?after=0&limit=10000` of the same events".into(),
        baseline: Some(Figure::latency(&s.conversation_read)),
        goals: vec![Goal::MaxRatio(2.0)],
    }
}

/// The Mayor's dispatch answered from a cached summary, against the same
/// dispatch on a host with no summariser.
fn summary_dispatch_row(r: &Results) -> Row {
    let measured = r.summary_dispatch.as_ref().ok();
    Row {
        workload: format!(
            "`POST /dispatch` of a Mayor with {} user turns, the omitted {} summarised (summary \
             cached, no model call)",
            summaries::TURNS,
            measured.map_or_else(|| "turns".to_owned(), |m| m.omitted.to_string())
        ),
        stasis: pick(&r.summary_dispatch, |m| m.cached),
        stasis_note: measured
            .map(|m| format!("{} untimed dispatches up to the first `cached`", m.warmups)),
        baseline_name: "the same dispatch on a host with no summariser (the turns cut)".into(),
        baseline: Some(pick(&r.summary_dispatch, |m| m.plain)),
        goals: vec![Goal::MaxRatio(1.1)],
    }
}

/// A new container's recovery, against the figures.
fn recovery_row(s: &StateFigures) -> Row {
    let recovered = s.recovery.as_ref().ok();
    Row {
        workload: format!(
            "recovery: a new container's first heartbeat → {} agents' kilo.db ({} each) \
             downloaded and sha256-verified + the Mayor's dispatch in hand",
            recovered.map_or(3, |c| c.agents),
            size(recovered.map_or(recovery::SNAPSHOT_BYTES, |c| c.bytes) as u64)
        ),
        stasis: pick(&s.recovery, |c| c.recovery),
        stasis_note: recovered.map(|c| {
            let mut note = format!(
                "the heartbeat alone (it carries the dispatch, {} prior turns) {}",
                c.turns,
                millis(c.heartbeat.median)
            );
            if c.retries > 0 {
                note.push_str(&format!("; **{} retried requests**", c.retries));
            }
            note
        }),
        baseline_name: "the issue's figures, not measured: 5–7 min today, target 6–10 s; \
                        aim here: under 2 s"
            .into(),
        baseline: None,
        goals: vec![Goal::MaxMedian(Duration::from_secs(2))],
    }
}
