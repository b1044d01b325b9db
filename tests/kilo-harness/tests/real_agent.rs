//! The SPEC's "same story with a real agent", against the stasis at `STASIS_URL` (its secret
//! in `STASIS_SECRET`): container A (kilo serve and the sidecar in one process group) holds a
//! few turns, is SIGKILLed mid-reply, and container B gets the Mayor back from `stasis-client
//! boot` (see `stasis_kilo_harness::story`).
//!
//! It guards the whole chain a crash recovery depends on: the sidecar forwarding kilo's events
//! and pushing kilo.db when a turn ends, boot hydrating it and handing over a dispatch with no
//! drain behind it, and the conversation rebuilt from kilo's real events, including the text of
//! a reply that only ever existed as streamed pieces.
//!
//! `scripts/test` runs it after each conformance run (host, then `wrangler dev --local`), with
//! the Kilo CLI installed (`stasis_kilo`) and `stasis-client` built. Without `STASIS_URL` it
//! says loudly that it did not run and passes, so that a plain `cargo test --workspace` needs
//! no server.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_kilo_harness::story::{self, StoryOptions};

#[test]
fn a_mayor_killed_mid_reply_comes_back_in_a_new_container_with_its_whole_conversation() {
    let Ok(url) = std::env::var("STASIS_URL") else {
        eprintln!(
            "\n*** real_agent: NOT RUN: STASIS_URL is not set. Run it against a stasis with \
             STASIS_URL=http://127.0.0.1:PORT STASIS_SECRET=<its secret> cargo test -p \
             stasis-kilo-harness --test real_agent (scripts/test does, on both runtimes). ***\n"
        );
        return;
    };
    let secret = std::env::var("STASIS_SECRET").expect("STASIS_SECRET is set beside STASIS_URL");
    let options = StoryOptions {
        url,
        secret,
        client_bin: story::client_bin().expect("the stasis-client binary"),
        kilo_bin: None,
        work: None,
    };
    let report = match story::play(&options, &|line| eprintln!("{line}")) {
        Ok(report) => report,
        Err(error) => panic!("the real-agent story failed: {error:#}"),
    };
    eprintln!(
        "recovery: boot {:.0?}, kilo start {:.0?}, boot to the restored session {:.0?}",
        report.boot_took, report.kilo_started_in, report.recovery
    );
    assert_eq!(
        report.held.len(),
        7,
        "three turns, the tool call its own turn"
    );
    assert!(report.cut.deltas >= story::DELTAS_BEFORE_KILL);
}
