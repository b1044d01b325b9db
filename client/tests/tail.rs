//! `tail` against a mock event stream: events arrive in order, and a dropped stream is reopened
//! where it stopped, with `Last-Event-ID`.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU32, Ordering};

use stasis_client::tail::{TailOptions, tail};
use stasis_client::{AgentRef, exit};
use support::{Mock, Response};

fn event(seq: u64) -> String {
    format!(
        "id: {seq}\ndata: {{\"seq\":{seq},\"type\":\"message.created\",\"session_id\":\"s1\",\n\
         data: \"data\":{{}},\"created_at\":1}}\n\n"
    )
}

fn stream(body: String) -> Response {
    Response::new(200)
        .header("Content-Type", "text/event-stream")
        .body(body)
}

#[test]
fn a_dropped_stream_is_reopened_after_the_last_event() {
    let calls = AtomicU32::new(0);
    let mock = Mock::start(move |_| match calls.fetch_add(1, Ordering::SeqCst) {
        0 => stream(format!(": keep-alive\n\n{}{}", event(1), event(2))),
        1 => Response::error(503, "unavailable", "restarting").header("Retry-After", "0"),
        _ => stream(event(3)),
    });
    let agent = AgentRef::new("t1", "main", "mayor").expect("ids");
    let options = TailOptions {
        after: 0,
        session_id: Some("s1".into()),
        event_type: Some("message.created".into()),
        ..TailOptions::default()
    };
    let mut seqs = Vec::new();
    tail(&mock.client(), &agent, &options, &mut |event| {
        let value: serde_json::Value = serde_json::from_str(&event.json).expect("event JSON");
        assert_eq!(value["seq"].as_u64(), event.seq);
        seqs.push(event.seq.unwrap_or_default());
        if seqs.len() == 3 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .expect("tail");
    assert_eq!(seqs, [1, 2, 3]);

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0];
    assert_eq!(first.path(), "/api/towns/t1/rigs/main/agents/mayor/events");
    assert_eq!(first.header("accept"), Some("text/event-stream"));
    assert!(first.target.contains("after=0"), "{}", first.target);
    assert!(first.target.contains("session_id=s1"), "{}", first.target);
    assert!(
        first.target.contains("type=message.created"),
        "{}",
        first.target
    );
    assert_eq!(first.header("last-event-id"), None);
    let resumed = &requests[2];
    assert_eq!(resumed.header("last-event-id"), Some("2"));
    assert!(resumed.target.contains("after=2"), "{}", resumed.target);
}

#[test]
fn an_expired_cursor_ends_the_tail_with_the_servers_answer() {
    let mock = Mock::start(|_| {
        Response::json(
            410,
            &serde_json::json!({"error": {"code": "cursor_expired",
                "message": "events before 500 are gone", "first_seq": 500}}),
        )
    });
    let agent = AgentRef::new("t1", "main", "mayor").expect("ids");
    let error = tail(&mock.client(), &agent, &TailOptions::default(), &mut |_| {
        ControlFlow::Continue(())
    })
    .expect_err("refused");
    assert_eq!(error.status(), Some(410));
    assert_eq!(error.exit_code(), exit::REFUSED);
    assert_eq!(mock.requests().len(), 1);
}
