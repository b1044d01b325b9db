//! Each workload's row: stasis's figure beside its baseline from the same run.

use super::{Sizes, Stasis, baseline, forwarding, guarded, recovery, supervised};
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
/// stasis's share of a supervised kilo's restart (issue 23's aim).
const MAX_RESTART_SHARE: Duration = Duration::from_millis(100);
/// stasis's share of the next container's start to the continuation sent (issue 23's aim:
/// kilo's own start plus at most this).
const MAX_CONTINUATION_SHARE: Duration = Duration::from_secs(1);
/// The inbox's p99, posted to delivered into a running kilo.
const MAX_INBOX_P99: Duration = Duration::from_millis(200);

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

/// The rows of the agent coming back by itself, on `target` (the host the bench started: the
/// stories need its secret). A quick run leaves them out: `scripts/test` plays both stories.
pub fn supervised(target: &Result<Stasis, Missing>, sizes: &Sizes, tmp: &Path) -> Vec<Row> {
    let measured = target.clone().and_then(|stasis| {
        if sizes.rounds < 2 {
            return Err(Missing::Skipped(
                "a quick run leaves the stories out (scripts/test plays them)".to_owned(),
            ));
        }
        if let Err(error) = stasis_kilo_harness::kilo_bin() {
            return Err(Missing::Skipped(format!("{error:#}")));
        }
        let Some(secret) = stasis.secret.clone() else {
            return Err(Missing::Skipped(
                "the stories mint their own tokens: they need a host the bench started".to_owned(),
            ));
        };
        let (rounds, dir) = (sizes.rounds, tmp.join("supervised"));
        guarded(
            "host: the supervision and resume stories with the real Kilo CLI",
            move || supervised::rounds(&stasis, &secret, rounds, &dir),
        )
    });
    let pick = |f: fn(&supervised::Supervised) -> crate::stats::Latency| {
        Figure::latency(&measured.as_ref().map(f).map_err(Clone::clone))
    };
    let verdict = |met: bool| if met { "met" } else { "**missed**" };
    let share_note = measured.as_ref().ok().map(|m| {
        format!(
            "stasis's share (the exit collected → the new kilo spawned) {}, aim ≤ {}: {}; the \
             kill → the exit collected (the kernel ending kilo) {}; over kilo alone, restarted \
             by hand {}",
            millis(m.share.median),
            millis(MAX_RESTART_SHARE),
            verdict(m.share.median <= MAX_RESTART_SHARE),
            millis(m.kill_to_exit.median),
            millis(m.over_bare.median)
        )
    });
    let continuation_note = measured.as_ref().ok().map(|m| {
        let share = m.continuation_share.median;
        format!(
            "stasis's share (the whole less kilo's start and its answer to the sidecar's first \
             request) {} (p99 {}), aim ≤ {}: {}; the total over kilo alone {} (kilo's start on \
             the busier container included)",
            millis(share),
            millis(m.continuation_share.p99),
            millis(MAX_CONTINUATION_SHARE),
            verdict(share <= MAX_CONTINUATION_SHARE),
            millis(m.continuation_over.median)
        )
    });
    let inbox_note = measured.as_ref().ok().map(|m| {
        format!(
            "aim p99 ≤ {}: {}; stasis's share (the total less kilo accepting the message) p50 \
             {}, p99 {}",
            millis(MAX_INBOX_P99),
            verdict(m.inbox.p99 <= MAX_INBOX_P99),
            millis(m.inbox_stasis.median),
            millis(m.inbox_stasis.p99)
        )
    });
    vec![
        Row {
            workload: "host: kill -9 of a supervised kilo (stasis-client up) → its session served again"
                .to_owned(),
            stasis: pick(|m| m.crash_to_served),
            stasis_note: share_note,
            baseline_name:
                "kilo alone in the same round, SIGKILLed and started again by hand: spawn → the session served"
                    .to_owned(),
            baseline: Some(pick(|m| m.bare_restart)),
            goals: Vec::new(),
        },
        Row {
            workload: "host: a container killed whole mid-reply; the next one's `up` → the cut reply's continuation at the model"
                .to_owned(),
            stasis: pick(|m| m.to_continuation),
            stasis_note: continuation_note,
            baseline_name:
                "kilo alone in the same round, a second kilo starting beside it as in the container: spawn → a prompt sent once it is healthy at the model"
                    .to_owned(),
            baseline: Some(pick(|m| m.bare_to_model)),
            goals: Vec::new(),
        },
        Row {
            workload: "host: inbox, POST /mayor/message → delivered into the running, idle kilo, 50 messages a round"
                .to_owned(),
            stasis: pick(|m| m.inbox),
            stasis_note: inbox_note,
            baseline_name:
                "kilo accepting the same messages (its prompt_async round trip, part of the total)"
                    .to_owned(),
            baseline: Some(pick(|m| m.inbox_runtime)),
            goals: Vec::new(),
        },
    ]
}

fn side_of(target: &Result<Stasis, Missing>) -> &'static str {
    target.as_ref().map_or("host", |s| s.side)
}
