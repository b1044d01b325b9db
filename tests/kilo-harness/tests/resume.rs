//! The agent comes back by itself, against the stasis at `STASIS_URL` (its secret in
//! `STASIS_SECRET`) and the real Kilo CLI (see `stasis_kilo_harness::story::resume`).
//!
//! It guards `stasis_client::resume`: after container A is SIGKILLed mid-reply, container B's
//! `after_start` finishes the cut reply with exactly one continuation carrying the streamed
//! text, delivers the message sent while no container lived once, and a second start sends
//! nothing; `follow_inbox` delivers messages into the running kilo once and in order; and a
//! Mayor whose kilo.db is gone gets a new session with the dispatch's prompt, once.
//!
//! It prints the recovered session, and the figures BENCHMARKS.md records: B's start to the
//! continuation reaching the model (with kilo's own start), and the inbox's posted-to-delivered
//! p50 and p99. Without `STASIS_URL` it says loudly that it did not run and passes.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_kilo_harness::story::resume::{self, latency_percentile};
use stasis_kilo_harness::story::{self, StoryOptions};

#[test]
fn a_mayor_cut_mid_reply_resumes_by_itself_and_gets_its_inbox_once() {
    let Ok(url) = std::env::var("STASIS_URL") else {
        eprintln!(
            "\n*** resume: NOT RUN: STASIS_URL is not set. Run it against a stasis with \
             STASIS_URL=http://127.0.0.1:PORT STASIS_SECRET=<its secret> cargo test -p \
             stasis-kilo-harness --test resume -- --nocapture ***\n"
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
    let report = match resume::play(&options, &|line| eprintln!("{line}")) {
        Ok(report) => report,
        Err(error) => panic!("the resume story failed: {error:#}"),
    };
    eprintln!("\nthe cut reply as stasis held it: {:?}", report.cut.text);
    eprintln!("kilo's session on B after recovery:\n{}", report.recovered);
    eprintln!("kilo's new session on C (no kilo.db):\n{}", report.fresh);
    let lat = &report.latencies;
    let p = |list: &[std::time::Duration], n| latency_percentile(list, n);
    eprintln!(
        "resume figures: B's boot start to the continuation at the model {:.0?} (boot {:.0?}, \
         kilo's own start {:.0?}, after_start {:.0?});\n  inbox posted to delivered into the \
         running kilo, {} messages: p50 {:.1?}, p99 {:.1?} (of which the POST /mayor/message \
         round trip p50 {:.1?}, p99 {:.1?}; the follower's record and prompt_async p50 {:.1?}, \
         p99 {:.1?}; of that, kilo's prompt_async p50 {:.1?}, p99 {:.1?})",
        report.to_continuation,
        report.boot_b,
        report.kilo_start_b,
        report.after_start_b,
        lat.total.len(),
        p(&lat.total, 50),
        p(&lat.total, 99),
        p(&lat.post, 50),
        p(&lat.post, 99),
        p(&lat.deliver, 50),
        p(&lat.deliver, 99),
        p(&lat.runtime, 50),
        p(&lat.runtime, 99),
    );
}
