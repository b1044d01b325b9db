//! Tests of the edge table's ratios and of the explanations under it.

use super::{EdgeRow, explanations, explanations::reading, per_op::per};
use crate::{
    cpu::CpuUse,
    report::Figure,
    results::Work,
    stats::{Latency, Rate},
};
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

#[test]
fn the_table_lists_every_workload_in_the_event_log_tables_order() {
    let rows = super::rows(&crate::results::Results::not_run());
    let names: Vec<&str> = rows.iter().map(|r| r.workload.as_str()).collect();
    assert_eq!(names.len(), 20, "{names:#?}");
    assert_eq!(
        names.first(),
        Some(&"append, 100-event batches of 100 B, 16 conns → 16 agents")
    );
    assert_eq!(names.last(), Some(&"`GET /healthz`, concurrency 1"));
    let messages: Vec<&&str> = names
        .iter()
        .filter(|n| n.starts_with("append 1000 B messages"))
        .collect();
    assert_eq!(messages.len(), 4);
    let skipped = rows
        .iter()
        .filter(|r| matches!(&r.edge, Figure::Skipped(why) if why == "does not apply"))
        .count();
    assert_eq!(skipped, 2, "the host-only rows say the edge does not apply");
}
