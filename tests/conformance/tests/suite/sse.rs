//! Server-Sent Events on `GET /events` with `Accept: text/event-stream`: the
//! backlog, then live events, each as `id: <seq>` and `data: <event JSON>`;
//! `Last-Event-ID` overrides `after`; filters apply; an expired cursor is a
//! 410 before any stream; a `:` comment line comes at least every 15 s.
#![allow(
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use std::time::{Duration, Instant};

use stasis_conformance::sse::{self, Frame, Stream};
use stasis_conformance::{AgentLog, Value, assert_error, batch, events, json, limits};

const WAIT: Duration = Duration::from_secs(10);

fn open(log: &AgentLog, query: &str, headers: &[(&str, &str)]) -> Stream {
    let stream = sse::open(&log.path(&format!("/events?{query}")), headers)
        .unwrap_or_else(|reply| panic!("expected a stream, got {} {}", reply.status, reply.text()));
    let content_type = stream.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("text/event-stream"),
        "a stream is text/event-stream, got {content_type:?}"
    );
    stream
}

fn seqs_of(events: &[(u64, Value)]) -> Vec<u64> {
    events.iter().map(|(seq, _)| *seq).collect()
}

#[test]
fn the_backlog_then_live_events_arrive_with_their_seq_as_id() {
    let log = AgentLog::fresh("sse-live");
    log.append(json!([{"type": "a", "data": {"n": 1}}, {"type": "b", "session_id": "s", "data": [2]}, {"type": "c"}]));
    let stream = open(&log, "after=0", &[]);
    let backlog = stream.take_events(3, WAIT);
    let read = events(&log.read(""));
    for ((seq, event), expected) in backlog.iter().zip(&read) {
        assert_eq!(event, expected, "data is the event JSON a read returns");
        assert_eq!(event["seq"], json!(seq), "id is the seq");
    }
    assert_eq!(seqs_of(&backlog), vec![1, 2, 3]);

    log.append(json!([{"type": "live", "data": "hello"}]));
    let (seq, event) = stream.next_event(WAIT).expect("a live event arrives");
    assert_eq!(seq, 4);
    assert_eq!(event, events(&log.read("after=3"))[0]);

    log.append(batch("more", 2));
    assert_eq!(seqs_of(&stream.take_events(2, WAIT)), vec![5, 6]);
}

#[test]
fn a_stream_on_an_empty_agent_delivers_the_first_event_live() {
    let log = AgentLog::fresh("sse-empty");
    let stream = open(&log, "", &[]);
    stream.assert_no_event(Duration::from_millis(500));
    log.append(json!([{"type": "first"}]));
    let (seq, event) = stream.next_event(WAIT).expect("the first event arrives");
    assert_eq!(seq, 1);
    assert_eq!(event["type"], json!("first"));
}

#[test]
fn after_starts_the_stream_past_the_cursor() {
    let log = AgentLog::fresh("sse-after");
    log.append(batch("x", 5));
    let stream = open(&log, "after=3", &[]);
    assert_eq!(seqs_of(&stream.take_events(2, WAIT)), vec![4, 5]);
    stream.assert_no_event(Duration::from_millis(500));
}

#[test]
fn last_event_id_overrides_after() {
    let log = AgentLog::fresh("sse-last-event-id");
    log.append(batch("x", 6));
    let stream = open(&log, "after=1", &[("Last-Event-ID", "4")]);
    assert_eq!(seqs_of(&stream.take_events(2, WAIT)), vec![5, 6]);
    stream.assert_no_event(Duration::from_millis(500));
}

#[test]
fn filters_apply_to_the_backlog_and_to_live_events() {
    let log = AgentLog::fresh("sse-filters");
    log.append(json!([
        {"type": "a", "session_id": "s1"},
        {"type": "b", "session_id": "s1"},
        {"type": "a", "session_id": "s2"},
    ]));
    let by_session = open(&log, "session_id=s1", &[]);
    let by_type = open(&log, "type=a", &[]);
    assert_eq!(seqs_of(&by_session.take_events(2, WAIT)), vec![1, 2]);
    assert_eq!(seqs_of(&by_type.take_events(2, WAIT)), vec![1, 3]);
    log.append(json!([
        {"type": "b", "session_id": "s2"},
        {"type": "a", "session_id": "s1"},
    ]));
    assert_eq!(seqs_of(&by_session.take_events(1, WAIT)), vec![5]);
    assert_eq!(seqs_of(&by_type.take_events(1, WAIT)), vec![5]);
    by_session.assert_no_event(Duration::from_millis(500));
    by_type.assert_no_event(Duration::from_millis(100));
}

#[test]
fn an_expired_cursor_is_refused_before_the_stream_starts() {
    let log = AgentLog::fresh("sse-expired");
    let total = limits::RETENTION + 20;
    let mut appended = 0;
    while appended < total {
        let n = (total - appended).min(limits::BATCH_EVENTS);
        log.append(batch("fill", usize::try_from(n).expect("small")));
        appended += n;
    }
    for (query, headers) in [
        ("after=0", vec![]),
        ("after=20", vec![("Last-Event-ID", "5")]),
    ] {
        let reply = match sse::open(&log.path(&format!("/events?{query}")), &headers) {
            Ok(_) => panic!("an expired cursor ({query}, {headers:?}) must not open a stream"),
            Err(reply) => reply,
        };
        let error = assert_error(&reply, 410, "cursor_expired");
        assert_eq!(error.get("first_seq"), Some(&json!(21)));
    }
    let stream = open(&log, "after=20", &[]);
    assert_eq!(
        stream.next_event(WAIT).expect("the oldest kept event").0,
        21
    );
}

#[test]
fn a_keep_alive_comment_arrives_within_sixteen_seconds() {
    let log = AgentLog::fresh("sse-keep-alive");
    let opened = Instant::now();
    let stream = open(&log, "", &[]);
    let deadline = opened + Duration::from_secs(16);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match stream.next_frame(left) {
            // A comment sent as the stream opens does not show the keep-alive timer.
            Some(Frame::Comment(_)) if opened.elapsed() < Duration::from_secs(1) => {}
            Some(Frame::Comment(_)) => return,
            Some(Frame::Event { id, data, .. }) => panic!("no event expected, got {id:?} {data}"),
            None => panic!("no comment line within 16 s of silence"),
        }
    }
}
