//! The event log's rules, checked against real SQLite.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use proptest::prelude::*;
use stasis_domain::event_log::*;
use stasis_domain::sql::SqlStore;
use stasis_domain::{DomainError, limits};
use stasis_sqlite::SqliteStore;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
    migrate(&store).expect("schema applies");
    store
}

fn events(n: usize, session: Option<&str>) -> Vec<NewEvent> {
    (0..n)
        .map(|i| NewEvent::new("message.created", session, &format!(r#"{{"i":{i}}}"#)))
        .collect()
}

fn settings(max_events: u64) -> AppendSettings {
    AppendSettings {
        now_ms: 1_700_000_000_000,
        max_events,
    }
}

fn stamped(n: usize, producer: &str, seq: u64) -> AppendBatch {
    AppendBatch {
        events: events(n, None),
        producer: Some(ProducerStamp {
            producer_id: producer.into(),
            producer_seq: seq,
        }),
    }
}

/// Every stored seq, read from the retention horizon.
fn all_seqs(store: &impl SqlStore) -> Vec<u64> {
    let horizon = state(store).expect("state").first_seq;
    let mut query = ReadQuery::after(horizon.saturating_sub(1));
    query.limit = limits::MAX_READ_LIMIT;
    read(store, &query)
        .expect("read")
        .events
        .iter()
        .map(|e| e.seq)
        .collect()
}

#[test]
fn seqs_start_at_one_and_follow_each_other_across_batches() {
    let store = store();
    let a = append(&store, &AppendBatch::new(events(3, None)), &settings(100)).expect("append");
    let b = append(&store, &AppendBatch::new(events(2, None)), &settings(100)).expect("append");
    assert_eq!((a.first_seq, a.last_seq, a.duplicate), (1, 3, false));
    assert_eq!((b.first_seq, b.last_seq), (4, 5));
    assert_eq!(all_seqs(&store), vec![1, 2, 3, 4, 5]);
}

#[test]
fn an_empty_batch_is_refused() {
    let store = store();
    let err = append(&store, &AppendBatch::new(vec![]), &settings(100)).unwrap_err();
    assert_eq!(err.code(), "invalid_request");
}

#[test]
fn a_batch_with_one_oversized_event_stores_nothing() {
    let store = store();
    let mut batch = events(2, None);
    batch.push(NewEvent::new(
        "blob",
        None,
        &format!("\"{}\"", "x".repeat(limits::MAX_EVENT_BYTES as usize)),
    ));
    let err = append(&store, &AppendBatch::new(batch), &settings(100)).unwrap_err();
    assert!(matches!(err, DomainError::TooLarge { limit, .. } if limit == limits::MAX_EVENT_BYTES));
    assert_eq!(state(&store).expect("state"), LogState::default());
}

#[test]
fn more_than_a_thousand_events_in_a_batch_is_refused() {
    let store = store();
    let err = append(
        &store,
        &AppendBatch::new(events(1001, None)),
        &settings(5000),
    )
    .unwrap_err();
    assert_eq!(err.code(), "batch_too_large");
    assert!(all_seqs(&store).is_empty());
}

#[test]
fn a_retried_stamp_returns_the_original_seqs_and_appends_nothing() {
    let store = store();
    let first = append(&store, &stamped(3, "container-a", 7), &settings(100)).expect("append");
    append(&store, &AppendBatch::new(events(1, None)), &settings(100)).expect("append");
    let retry = append(&store, &stamped(3, "container-a", 7), &settings(100)).expect("retry");
    assert_eq!(
        (retry.first_seq, retry.last_seq, retry.duplicate),
        (1, 3, true)
    );
    assert_eq!(first.first_seq, retry.first_seq);
    assert_eq!(all_seqs(&store), vec![1, 2, 3, 4]);
}

#[test]
fn stamps_are_per_producer() {
    let store = store();
    append(&store, &stamped(1, "a", 1), &settings(100)).expect("append");
    let other = append(&store, &stamped(1, "b", 1), &settings(100)).expect("append");
    assert!(!other.duplicate);
    assert_eq!(other.first_seq, 2);
}

#[test]
fn a_stamp_older_than_the_remembered_window_is_refused() {
    let store = store();
    let window = limits::PRODUCER_WINDOW;
    for seq in 10..10 + window {
        append(&store, &stamped(1, "p", seq), &settings(1_000_000)).expect("append");
    }
    let err = append(&store, &stamped(1, "p", 3), &settings(1_000_000)).unwrap_err();
    assert_eq!(err.code(), "producer_seq_stale");
    // Late but inside the window is fine: pipelined batches may reorder.
    append(&store, &stamped(1, "q", 5), &settings(1_000_000)).expect("append");
    let late = append(&store, &stamped(1, "q", 4), &settings(1_000_000)).expect("late stamp");
    assert!(!late.duplicate);
}

#[test]
fn reads_resume_after_an_exclusive_cursor() {
    let store = store();
    append(&store, &AppendBatch::new(events(10, None)), &settings(100)).expect("append");
    let mut query = ReadQuery::after(4);
    query.limit = 3;
    let page = read(&store, &query).expect("read");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![5, 6, 7]
    );
    assert!(page.has_more);
    assert_eq!(page.next_after, 7);
    let rest = read(&store, &ReadQuery::after(page.next_after)).expect("read");
    assert_eq!(rest.events.first().map(|e| e.seq), Some(8));
    assert!(!rest.has_more);
    assert_eq!(
        (rest.next_after, rest.first_seq, rest.last_seq),
        (10, 1, 10)
    );
}

#[test]
fn filters_select_by_session_and_type_and_skip_to_the_end() {
    let store = store();
    let mut batch = events(2, Some("s1"));
    batch.push(NewEvent::new("tool.called", Some("s2"), "{}"));
    batch.push(NewEvent::new("tool.called", Some("s1"), "{}"));
    append(&store, &AppendBatch::new(batch), &settings(100)).expect("append");

    let mut query = ReadQuery::after(0);
    query.session_id = Some("s1".into());
    query.event_type = Some("tool.called".into());
    let page = read(&store, &query).expect("read");
    assert_eq!(
        page.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![4]
    );
    assert_eq!(page.next_after, 4);

    query.session_id = Some("s3".into());
    let none = read(&store, &query).expect("read");
    assert!(none.events.is_empty());
    assert_eq!(
        none.next_after, 4,
        "an empty filtered page still advances the cursor"
    );
}

#[test]
fn retention_keeps_the_newest_and_expires_older_cursors() {
    let store = store();
    for _ in 0..3 {
        append(
            &store,
            &AppendBatch::new(events(4, Some("s"))),
            &settings(5),
        )
        .expect("append");
    }
    assert_eq!(all_seqs(&store), vec![8, 9, 10, 11, 12]);
    let st = state(&store).expect("state");
    assert_eq!((st.first_seq, st.last_seq, st.event_count), (8, 12, 5));
    assert_eq!(
        read(&store, &ReadQuery::after(6)).unwrap_err(),
        DomainError::CursorExpired { first_seq: 8 }
    );
    assert_eq!(
        read(&store, &ReadQuery::after(7))
            .expect("read")
            .events
            .len(),
        5
    );
    let session = &sessions(&store).expect("sessions")[0];
    assert_eq!(
        (session.first_seq, session.last_seq, session.event_count),
        (8, 12, 5)
    );
}

#[test]
fn sessions_are_created_by_their_first_event() {
    let store = store();
    append(
        &store,
        &AppendBatch::new(events(2, Some("a"))),
        &settings(100),
    )
    .expect("append");
    append(
        &store,
        &AppendBatch::new(events(1, Some("b"))),
        &settings(100),
    )
    .expect("append");
    append(
        &store,
        &AppendBatch::new(events(1, Some("a"))),
        &settings(100),
    )
    .expect("append");
    let list = sessions(&store).expect("sessions");
    let summary: Vec<_> = list
        .iter()
        .map(|s| {
            (
                s.session_id.as_str(),
                s.first_seq,
                s.last_seq,
                s.event_count,
                s.status.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("a", 1, 4, 3, "running"), ("b", 3, 3, 1, "running")]
    );
}

#[test]
fn a_limit_outside_the_allowed_range_is_refused() {
    let store = store();
    for limit in [0, limits::MAX_READ_LIMIT + 1] {
        let mut query = ReadQuery::after(0);
        query.limit = limit;
        assert_eq!(read(&store, &query).unwrap_err().code(), "invalid_request");
    }
}

/// One step of a random workload.
#[derive(Debug, Clone)]
enum Step {
    Append {
        size: usize,
        stamp: Option<(u8, u64)>,
    },
}

fn step() -> impl Strategy<Value = Step> {
    (1usize..20, proptest::option::of((0u8..3, 0u64..12)))
        .prop_map(|(size, stamp)| Step::Append { size, stamp })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the mix of batches, retries and retention: stored seqs are
    /// strictly increasing with no gaps, end at the last assigned seq, and a
    /// retried stamp never appends twice.
    #[test]
    fn seqs_stay_gapless_retries_stay_idempotent_and_retention_holds(
        steps in proptest::collection::vec(step(), 1..40),
        max_events in 1u64..60,
    ) {
        let store = store();
        let mut seen: std::collections::HashMap<(u8, u64), AppendOutcome> = Default::default();
        let mut expected_last = 0u64;
        for Step::Append { size, stamp } in steps {
            let batch = match stamp {
                Some((producer, seq)) => stamped(size, &format!("p{producer}"), seq),
                None => AppendBatch::new(events(size, None)),
            };
            let outcome = append(&store, &batch, &settings(max_events)).expect("append");
            match stamp.and_then(|s| seen.get(&s).map(|o| (s, *o))) {
                Some((_, original)) => {
                    prop_assert!(outcome.duplicate);
                    prop_assert_eq!((outcome.first_seq, outcome.last_seq), (original.first_seq, original.last_seq));
                }
                None => {
                    prop_assert!(!outcome.duplicate);
                    prop_assert_eq!(outcome.first_seq, expected_last + 1);
                    prop_assert_eq!(outcome.last_seq, expected_last + size as u64);
                    expected_last = outcome.last_seq;
                    if let Some(s) = stamp { seen.insert(s, outcome); }
                }
            }
            let seqs = all_seqs(&store);
            let kept = expected_last.min(max_events);
            prop_assert_eq!(seqs.len() as u64, kept);
            let want: Vec<u64> = (expected_last - kept + 1..=expected_last).collect();
            prop_assert_eq!(&seqs, &want);
            let st = state(&store).expect("state");
            prop_assert_eq!(st.last_seq, expected_last);
            prop_assert_eq!(st.first_seq, expected_last - kept + 1);
        }
    }

    /// Paging through the log with any limit visits every event once, in order.
    #[test]
    fn paging_visits_every_event_exactly_once(total in 1usize..300, limit in 1u32..50) {
        let store = store();
        append(&store, &AppendBatch::new(events(total, None)), &settings(1000)).expect("append");
        let mut cursor = 0;
        let mut visited = Vec::new();
        loop {
            let mut query = ReadQuery::after(cursor);
            query.limit = limit;
            let page = read(&store, &query).expect("read");
            visited.extend(page.events.iter().map(|e| e.seq));
            cursor = page.next_after;
            if !page.has_more { break; }
        }
        prop_assert_eq!(visited, (1..=total as u64).collect::<Vec<_>>());
    }
}

#[test]
fn a_page_of_large_events_stops_at_the_byte_budget() {
    let store = store();
    let big = format!("\"{}\"", "x".repeat(1024 * 1024 - 64));
    for _ in 0..10 {
        let batch = AppendBatch::new(vec![NewEvent::new("big", None, &big)]);
        append(&store, &batch, &settings(100)).expect("append");
    }
    let mut query = ReadQuery::after(0);
    query.limit = 100;
    let page = read(&store, &query).expect("read");
    assert_eq!(page.events.len(), 8, "8 MiB of data per page");
    assert!(page.has_more);
    assert_eq!(page.next_after, 8);
    let rest = read(&store, &ReadQuery::after(page.next_after)).expect("read");
    assert_eq!(rest.events.len(), 2);
    assert!(!rest.has_more);
}

#[test]
fn a_batch_longer_than_one_insert_keeps_its_order_and_its_sessions_counts() {
    let store = store();
    let batch: Vec<NewEvent> = (0..37)
        .map(|i| {
            let session = if i % 2 == 0 { "even" } else { "odd" };
            NewEvent::new("message.created", Some(session), &format!(r#"{{"i":{i}}}"#))
        })
        .collect();
    let outcome = append(&store, &AppendBatch::new(batch), &settings(100)).expect("append");
    assert_eq!((outcome.first_seq, outcome.last_seq), (1, 37));
    let page = read(&store, &ReadQuery::after(0)).expect("read");
    let stored: Vec<(u64, Option<&str>, &str)> = page
        .events
        .iter()
        .map(|e| (e.seq, e.session_id.as_deref(), e.data.as_str()))
        .collect();
    let datas: Vec<String> = (0..37).map(|i| format!(r#"{{"i":{i}}}"#)).collect();
    let want: Vec<(u64, Option<&str>, &str)> = (0..37u64)
        .map(|i| {
            let session = if i % 2 == 0 { "even" } else { "odd" };
            (i + 1, Some(session), datas[i as usize].as_str())
        })
        .collect();
    assert_eq!(stored, want);
    let counts: Vec<_> = sessions(&store)
        .expect("sessions")
        .iter()
        .map(|s| (s.session_id.clone(), s.first_seq, s.last_seq, s.event_count))
        .collect();
    assert_eq!(
        counts,
        vec![("even".into(), 1, 37, 19), ("odd".into(), 2, 36, 18)]
    );
}

#[test]
fn a_page_ends_at_the_limit_or_the_byte_budget_whichever_comes_first() {
    let store = store();
    // 20 events of 512 KiB: 16 fit the 8 MiB budget.
    let half = format!("\"{}\"", "y".repeat(512 * 1024 - 2));
    for _ in 0..20 {
        let batch = AppendBatch::new(vec![NewEvent::new("half", None, &half)]);
        append(&store, &batch, &settings(100)).expect("append");
    }
    for (limit, want, more) in [(1, 1, true), (15, 15, true), (16, 16, true), (17, 16, true)] {
        let mut query = ReadQuery::after(0);
        query.limit = limit;
        let page = read(&store, &query).expect("read");
        assert_eq!(
            (page.events.len(), page.has_more),
            (want, more),
            "limit {limit}"
        );
    }
    let mut query = ReadQuery::after(16);
    query.limit = 4;
    let last = read(&store, &query).expect("read");
    assert_eq!(
        (last.events.len(), last.has_more, last.next_after),
        (4, false, 20)
    );
}
