//! Calls and replies cross a wire on the edge (worker → Durable Object), so
//! every variant must survive JSON.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    event_log::{AppendBatch, AppendOutcome, Event, NewEvent, ReadPage, ReadQuery},
};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(
    value: T,
) {
    let json = serde_json::to_string(&value).expect("serializes");
    let back: T = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(back, value, "{json}");
}

#[test]
fn every_call_survives_json() {
    round_trip(AgentCall::AppendEvents(AppendBatch::new(vec![
        NewEvent::new("t", Some("s"), r#"{"a":1}"#),
    ])));
    round_trip(AgentCall::ReadEvents(ReadQuery::after(3)));
}

#[test]
fn every_reply_and_error_survives_json() {
    round_trip(AgentReply::Appended(AppendOutcome {
        first_seq: 1,
        last_seq: 2,
        duplicate: true,
    }));
    round_trip(AgentReply::Events(ReadPage {
        events: vec![Event {
            seq: 1,
            event_type: "t".into(),
            session_id: None,
            data: "[1]".into(),
            created_at_ms: 9,
        }],
        next_after: 1,
        has_more: false,
        first_seq: 1,
        last_seq: 1,
    }));
    let result: Result<AgentReply, DomainError> = Err(DomainError::CursorExpired { first_seq: 4 });
    round_trip(result);
    round_trip::<Result<AgentReply, DomainError>>(Err(DomainError::too_large(
        "event_too_large",
        "big",
        7,
    )));
    round_trip::<Result<AgentReply, DomainError>>(Err(stasis_domain::fence::superseded(
        "container-a",
        Some("container-b"),
    )));
}
