//! A seeded HTTP fuzz over every endpoint (`stasis_conformance::fuzz`):
//! a few thousand valid, near-valid and hostile requests, each of which
//! must get a documented answer in the contract's shape, never a dropped
//! connection or a 500; every refused request must change nothing; and
//! afterwards every read of every fuzzed agent must still answer.
//!
//! `STASIS_FUZZ_SEED` and `STASIS_FUZZ_REQUESTS` override the fixed seed
//! and the count, to explore.

use std::io::Write as _;

use stasis_conformance::fuzz::{self, Config};

/// Requests per run: each of the 20 routes meets each of the 12 mutations
/// about six times (each request is followed by some nine reads, so 3,000
/// took five minutes of CI's time under `wrangler dev`); set
/// `STASIS_FUZZ_REQUESTS` to explore further.
const REQUESTS: usize = 1_500;

#[test]
fn every_fuzzed_request_gets_a_documented_answer_and_refusals_change_nothing() {
    let config = Config::from_env(REQUESTS);
    let report = fuzz::run(config);
    // Straight to the stderr handle: the test harness captures `eprintln!`
    // of passing tests, and this summary is meant to be seen.
    let _ = std::io::stderr().write_all(report.summary(config.seed, config.worlds).as_bytes());
    assert_eq!(
        report.dropped, 0,
        "dropped exchanges (see the summary above)"
    );
    assert!(
        report.failures.is_empty(),
        "{} failures with seed {} (see the summary above; STASIS_FUZZ_SEED={} replays them)",
        report.failures.len(),
        config.seed,
        config.seed
    );
}
