//! Each workload's row: stasis's figure beside its baseline from the same run.

use super::{Sizes, Stasis, baseline, forwarding, guarded, recovery};
use crate::report::{Figure, Goal, Row, millis, thousands_sep};
use crate::results::Missing;
use std::path::Path;
use std::time::Duration;

/// What forwarding should sustain into one agent.
const MIN_EVENTS_PER_SEC: f64 = 20_000.0;
/// The p99 delay from the source to readable that forwarding should keep under.
const MAX_P99: Duration = Duration::from_millis(100);
/// What a whole recovery should take.
const MAX_RECOVERY: Duration = Duration::from_secs(3);

/// The burst and paced rows of forwarding on `target`.
pub fn forwarding(target: &Result<Stasis, Missing>, sizes: &Sizes, tmp: &Path) -> Vec<Row> {
    let side = side_of(target);
    let sidecar = target.clone().and_then(|stasis| {
        let (sizes, dir) = (*sizes, tmp.join(format!("forward-{}", stasis.side)));
        guarded(
            &format!("{side}: sidecar forwarding from a synthetic kilo"),
            move || forwarding::through_sidecar(&stasis, &sizes, &dir),
        )
    });
    let burst = target.clone().and_then(|stasis| {
        let sizes = *sizes;
        guarded(&format!("{side}: direct appends of the burst"), move || {
            baseline::burst(&stasis, &sizes)
        })
    });
    let paced = target.clone().and_then(|stasis| {
        let sizes = *sizes;
        guarded(&format!("{side}: direct paced appends"), move || {
            baseline::paced(&stasis, &sizes)
        })
    });
    let rate = sidecar.as_ref().map(|f| f.rate).map_err(Clone::clone);
    let delay = sidecar.as_ref().map(|f| f.delay).map_err(Clone::clone);
    let p99_note = delay.as_ref().ok().map(|d| {
        let met = if d.p99 <= MAX_P99 {
            "met"
        } else {
            "**missed**"
        };
        format!("aim p99 ≤ {}: {met}", millis(MAX_P99))
    });
    vec![
        Row {
            workload: format!(
                "{side}: sidecar forwarding, a burst of {} events from a synthetic kilo into one agent, until all are readable",
                thousands_sep(usize::try_from(sizes.burst).unwrap_or(usize::MAX))
            ),
            stasis: Figure::rate(&rate, "ev/s"),
            stasis_note: None,
            baseline_name: "the same events appended directly, 1,000 a request".to_owned(),
            baseline: Some(Figure::rate(&burst, "ev/s")),
            goals: vec![Goal::MinRate(MIN_EVENTS_PER_SEC, "ev/s")],
        },
        Row {
            workload: format!(
                "{side}: sidecar forwarding, source → readable from stasis's event stream, {} events at {}/s",
                sizes.paced, sizes.rate
            ),
            stasis: Figure::latency(&delay),
            stasis_note: p99_note,
            baseline_name: "one event a request appended directly, request → readable".to_owned(),
            baseline: Some(Figure::latency(&paced)),
            goals: Vec::new(),
        },
    ]
}

/// The recovery row of a real kilo agent on `target`.
pub fn recovery(target: &Result<Stasis, Missing>, sizes: &Sizes, tmp: &Path) -> Row {
    let side = side_of(target);
    let measured = target.clone().and_then(|stasis| {
        if let Err(error) = stasis_kilo_harness::kilo_bin() {
            return Err(Missing::Skipped(format!("{error:#}")));
        }
        let (rounds, dir) = (sizes.rounds, tmp.join(format!("kilo-{}", stasis.side)));
        guarded(
            &format!("{side}: recovery of a real kilo agent"),
            move || recovery::rounds(&stasis, rounds, &dir),
        )
    });
    let note = measured.as_ref().ok().map(|r| {
        format!(
            "boot alone {} (p99 {})",
            millis(r.boot.median),
            millis(r.boot.p99)
        )
    });
    Row {
        workload: format!(
            "{side}: recovery of a real kilo agent, container B's boot → kilo serve answering with the restored session"
        ),
        stasis: Figure::latency(&measured.as_ref().map(|r| r.recovery).map_err(Clone::clone)),
        stasis_note: note,
        baseline_name: "kilo serve's own start on an empty home → its first GET /session answer"
            .to_owned(),
        baseline: Some(Figure::latency(
            &measured
                .as_ref()
                .map(|r| r.kilo_start)
                .map_err(Clone::clone),
        )),
        goals: vec![Goal::MaxMedian(MAX_RECOVERY)],
    }
}

fn side_of(target: &Result<Stasis, Missing>) -> &'static str {
    target.as_ref().map_or("host", |s| s.side)
}
