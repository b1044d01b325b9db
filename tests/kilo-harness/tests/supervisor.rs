//! The supervisor with the real Kilo CLI (issue 23's process side), against the stasis at
//! `STASIS_URL` (its secret in `STASIS_SECRET`); see `stasis_kilo_harness::supervision`.
//!
//! It guards what makes an agent come back by itself: a `kill -9` of kilo alone is healed in
//! the same container with the session intact, a stalled turn is aborted at its deadline,
//! SIGTERM runs the eviction's phases (nudge, save command, last snapshot) and exits 0, a fenced
//! container's kilos are killed, and `stasis-client up` brings back every agent of the registry.
//!
//! `scripts/test` runs it after each conformance run (host, then `wrangler dev --local`), with
//! the Kilo CLI installed (`stasis_kilo`) and `stasis-client` built. Without `STASIS_URL` it
//! says loudly that it did not run and passes.
//!
//! To see a check fail with its feature switched off, `STASIS_STORY_UP_ARGS` replaces or adds
//! `up`'s options (`--name=value;...`, e.g. `--turn-deadline=0s` or `--cut-reply=nothing`);
//! `STASIS_KEEP_WORK=1` keeps the containers' folders and timestamped logs afterwards.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_kilo_harness::supervision::{self, SupervisionOptions};

#[test]
fn agents_under_their_supervisors_heal_abort_evict_and_stop_when_fenced() {
    let Ok(url) = std::env::var("STASIS_URL") else {
        eprintln!(
            "\n*** supervisor: NOT RUN: STASIS_URL is not set. Run it against a stasis with \
             STASIS_URL=http://127.0.0.1:PORT STASIS_SECRET=<its secret> cargo test -p \
             stasis-kilo-harness --test supervisor (scripts/test does, on both runtimes). ***\n"
        );
        return;
    };
    let secret = std::env::var("STASIS_SECRET").expect("STASIS_SECRET is set beside STASIS_URL");
    let options = SupervisionOptions {
        url,
        secret,
        client_bin: stasis_kilo_harness::story::client_bin().expect("the stasis-client binary"),
        kilo_bin: stasis_kilo_harness::kilo_bin().expect("the Kilo CLI"),
    };
    let report = match supervision::play(&options, &|line| eprintln!("{line}")) {
        Ok(report) => report,
        Err(error) => panic!("the supervision story failed: {error:#}"),
    };
    let share = report
        .crash_to_served
        .saturating_sub(report.kilo_start + report.restart_delay);
    eprintln!(
        "measured: kilo crash to its session served again {:.0?} (kilo's own start {:.0?}, \
         restart delay {:.0?}, the rest, stasis's share: {share:.0?}); stalled turn aborted \
         after {:.1?}; eviction {:.1?}; fenced exit {:.1?} after the new heartbeat",
        report.crash_to_served,
        report.kilo_start,
        report.restart_delay,
        report.stalled_turn_aborted_after,
        report.eviction_took,
        report.fenced_exit_after
    );
}
