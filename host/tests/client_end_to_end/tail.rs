//! tail: the backlog, then live events.

use std::ops::ControlFlow;
use std::time::Duration;

use serde_json::{Value, json};
use stasis_client::AgentRef;
use stasis_client::tail::{TailOptions, tail};

use crate::helpers::{call, client, start_server};

#[test]
fn tail_delivers_the_backlog_then_live_events_in_seq_order() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let events = "/api/towns/e2e-tail/rigs/hq/agents/mayor/events";
    let post = |texts: &[&str]| {
        let batch: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "note", "session_id": "s1", "data": {"text": t}}))
            .collect();
        let (status, _) = call(&server, "POST", events, Some(&json!({"events": batch})));
        assert_eq!(status, 200);
    };
    post(&["one", "two", "three"]);
    let mayor = AgentRef::new("e2e-tail", "hq", "mayor").expect("ids");
    let (sender, received) = std::sync::mpsc::channel();
    let follower = {
        let client = client(&server);
        std::thread::spawn(move || {
            let options = TailOptions {
                after: 1,
                session_id: Some("s1".into()),
                ..TailOptions::default()
            };
            tail(&client, &mayor, &options, &mut |event| {
                let value: Value = serde_json::from_str(&event.json).expect("event JSON");
                assert_eq!(value["seq"].as_u64(), event.seq);
                let _ = sender.send(value);
                if event.seq == Some(5) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
        })
    };
    let wait = Duration::from_secs(30);
    let backlog: Vec<Value> = (0..2)
        .map(|_| received.recv_timeout(wait).expect("backlog"))
        .collect();
    post(&["four", "five"]);
    let live: Vec<Value> = (0..2)
        .map(|_| received.recv_timeout(wait).expect("live"))
        .collect();
    follower
        .join()
        .expect("the follower")
        .expect("tail ends when asked");
    let texts: Vec<&str> = backlog
        .iter()
        .chain(&live)
        .map(|e| e["data"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["two", "three", "four", "five"]);
}
