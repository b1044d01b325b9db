//! Idempotent appends: a retry of a remembered `producer_id` + `producer_seq`
//! appends nothing and returns the original seqs with `duplicate: true`, even
//! when the retries race. Each producer's newest 1,000 stamps are remembered;
//! an older stamp is 409 `producer_seq_stale`.
#![allow(
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use std::sync::Barrier;

use stasis_conformance::{AgentLog, assert_error, batch, json, limits, seqs};

#[test]
fn a_retry_returns_the_original_seqs_and_appends_nothing() {
    let log = AgentLog::fresh("retry");
    log.append(batch("before", 2));
    let first = log.append_stamped(batch("x", 3), "producer-a", 0);
    assert_eq!(
        first,
        json!({"first_seq": 3, "last_seq": 5, "duplicate": false})
    );
    let before = log.state();
    for _ in 0..3 {
        let retry = log.append_stamped(batch("x", 3), "producer-a", 0);
        assert_eq!(
            retry,
            json!({"first_seq": 3, "last_seq": 5, "duplicate": true})
        );
    }
    log.assert_unchanged(&before);
    assert_eq!(log.append(batch("after", 1))["first_seq"], json!(6));
}

#[test]
fn a_retry_after_other_appends_still_returns_the_original_seqs() {
    let log = AgentLog::fresh("retry-later");
    let stamped = log.append_stamped(batch("x", 2), "p", 10);
    assert_eq!(stamped["first_seq"], json!(1));
    log.append(batch("y", 4));
    log.append_stamped(batch("z", 1), "p", 11);
    let retry = log.append_stamped(batch("x", 2), "p", 10);
    assert_eq!(
        retry,
        json!({"first_seq": 1, "last_seq": 2, "duplicate": true})
    );
    assert_eq!(log.read("")["last_seq"], json!(7));
}

#[test]
fn different_producers_with_the_same_seq_are_independent() {
    let log = AgentLog::fresh("producers");
    let a = log.append_stamped(batch("a", 1), "producer-a", 0);
    let b = log.append_stamped(batch("b", 2), "producer-b", 0);
    assert_eq!(
        a,
        json!({"first_seq": 1, "last_seq": 1, "duplicate": false})
    );
    assert_eq!(
        b,
        json!({"first_seq": 2, "last_seq": 3, "duplicate": false})
    );
    let a_again = log.append_stamped(batch("a", 1), "producer-a", 1);
    assert_eq!(
        a_again,
        json!({"first_seq": 4, "last_seq": 4, "duplicate": false})
    );
    assert_eq!(seqs(&log.read("")), vec![1, 2, 3, 4]);
}

#[test]
fn the_same_stamp_on_another_agent_is_independent() {
    let log = AgentLog::fresh("stamp-agents");
    let other = log.sibling("agent-2");
    let here = log.append_stamped(batch("x", 1), "p", 0);
    let there = other.append_stamped(batch("x", 1), "p", 0);
    assert_eq!(here["duplicate"], json!(false));
    assert_eq!(there["duplicate"], json!(false));
}

#[test]
fn concurrent_retries_of_one_stamp_append_exactly_once() {
    const THREADS: usize = 8;
    let log = AgentLog::fresh("racing-retries");
    let barrier = Barrier::new(THREADS);
    let replies: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    log.append_stamped(batch("x", 3), "racer", 42)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an appending thread finishes"))
            .collect()
    });
    let fresh = replies
        .iter()
        .filter(|r| r["duplicate"] == json!(false))
        .count();
    assert_eq!(fresh, 1, "exactly one retry appends: {replies:?}");
    for reply in &replies {
        assert_eq!(reply["first_seq"], json!(1), "{replies:?}");
        assert_eq!(reply["last_seq"], json!(3), "{replies:?}");
    }
    assert_eq!(seqs(&log.read("")), vec![1, 2, 3]);
}

#[test]
fn a_stamp_older_than_the_remembered_window_is_stale() {
    let log = AgentLog::fresh("stale");
    for seq in 0..=limits::PRODUCER_WINDOW {
        log.append_stamped(batch("x", 1), "p", seq);
    }
    let before = log.state();
    let reply =
        log.post(&json!({"events": [{"type": "x"}], "producer_id": "p", "producer_seq": 0}));
    assert_error(&reply, 409, "producer_seq_stale");
    // The oldest stamp still remembered is a duplicate, not stale.
    let kept = log.append_stamped(batch("x", 1), "p", 1);
    assert_eq!(
        kept,
        json!({"first_seq": 2, "last_seq": 2, "duplicate": true})
    );
    log.assert_unchanged(&before);
}
