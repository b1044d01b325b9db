//! Shared helpers: events numbered from seq 1, expected turns, and the
//! shapes of the events that carry messages.

use serde_json::json;
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;

/// Events numbered from seq 1, in the order given.
pub(crate) fn log(entries: &[(&str, serde_json::Value)]) -> Vec<Event> {
    entries
        .iter()
        .zip(1..)
        .map(|((event_type, data), seq)| event(seq, event_type, &data.to_string()))
        .collect()
}

pub(crate) fn event(seq: u64, event_type: &str, data: &str) -> Event {
    Event {
        seq,
        event_type: event_type.to_owned(),
        session_id: None,
        data: data.to_owned(),
        created_at_ms: 1_700_000_000_000,
    }
}

pub(crate) fn turns(events: &[Event]) -> Vec<Turn> {
    rebuild(events, &Budget::default()).turns
}

pub(crate) fn turn(role: &str, content: &str) -> Turn {
    Turn {
        role: role.to_owned(),
        content: content.to_owned(),
        unfinished: false,
    }
}

pub(crate) fn unfinished(role: &str, content: &str) -> Turn {
    Turn {
        unfinished: true,
        ..turn(role, content)
    }
}

/// How stasis logs a user's message (`POST /mayor/message`).
pub(crate) fn user_message(id: &str, text: &str) -> (&'static str, serde_json::Value) {
    (
        "message.completed",
        json!({"info": {"id": id, "role": "user"}, "part": {"id": format!("{id}-p"), "text": text}}),
    )
}

pub(crate) fn delta(message: &str, part: &str, text: &str) -> (&'static str, serde_json::Value) {
    (
        "message_part.updated",
        json!({"message_id": message, "part": {"id": part}, "delta": text}),
    )
}

pub(crate) fn full(message: &str, part: &str, text: &str) -> (&'static str, serde_json::Value) {
    (
        "message.part.updated",
        json!({"message_id": message, "part": {"id": part, "text": text}}),
    )
}

pub(crate) fn created(message: &str, role: &str) -> (&'static str, serde_json::Value) {
    (
        "message.created",
        json!({"info": {"id": message, "role": role}}),
    )
}

pub(crate) fn completed(message: &str) -> (&'static str, serde_json::Value) {
    ("assistant.completed", json!({"message_id": message}))
}
