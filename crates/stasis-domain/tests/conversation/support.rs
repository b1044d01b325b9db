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
    Turn::new(role, content, false)
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

// kilo's own shapes (`GET /event` properties), as a container stores them.

/// `message.updated` for a message as kilo first announces it.
pub(crate) fn k_message(id: &str, role: &str) -> (&'static str, serde_json::Value) {
    (
        "message.updated",
        json!({"sessionID": "s", "info": {"id": id, "sessionID": "s", "role": role, "time": {"created": 1}}}),
    )
}

/// `message.updated` for an assistant message with more `info` fields.
pub(crate) fn k_message_with(
    id: &str,
    extra: serde_json::Value,
) -> (&'static str, serde_json::Value) {
    let mut info = json!({"id": id, "sessionID": "s", "role": "assistant", "time": {"created": 1}});
    if let (Some(info), Some(extra)) = (info.as_object_mut(), extra.as_object()) {
        info.extend(extra.clone());
    }
    ("message.updated", json!({"sessionID": "s", "info": info}))
}

/// `message.updated` once kilo has completed an assistant message.
pub(crate) fn k_completed(id: &str) -> (&'static str, serde_json::Value) {
    k_message_with(
        id,
        json!({"finish": "stop", "time": {"created": 1, "completed": 2}}),
    )
}

/// `message.part.updated` with `part` (its id and message filled in).
pub(crate) fn k_part(
    message: &str,
    part: &str,
    mut body: serde_json::Value,
) -> (&'static str, serde_json::Value) {
    body["id"] = json!(part);
    body["messageID"] = json!(message);
    body["sessionID"] = json!("s");
    (
        "message.part.updated",
        json!({"sessionID": "s", "part": body, "time": 1}),
    )
}

/// A user's text part: whole, no timing.
pub(crate) fn k_user_text(
    message: &str,
    part: &str,
    text: &str,
) -> (&'static str, serde_json::Value) {
    k_part(message, part, json!({"type": "text", "text": text}))
}

/// The empty text part kilo sends when a reply starts streaming.
pub(crate) fn k_text_start(message: &str, part: &str) -> (&'static str, serde_json::Value) {
    k_part(
        message,
        part,
        json!({"type": "text", "text": "", "time": {"start": 1}}),
    )
}

/// The part's final text (`time.end` set).
pub(crate) fn k_text_end(
    message: &str,
    part: &str,
    text: &str,
) -> (&'static str, serde_json::Value) {
    k_part(
        message,
        part,
        json!({"type": "text", "text": text, "time": {"start": 1, "end": 2}}),
    )
}

/// `message.part.delta` of the `text` field.
pub(crate) fn k_delta(message: &str, part: &str, piece: &str) -> (&'static str, serde_json::Value) {
    (
        "message.part.delta",
        json!({"sessionID": "s", "messageID": message, "partID": part, "field": "text", "delta": piece}),
    )
}

/// A tool part in `state`.
pub(crate) fn k_tool(
    message: &str,
    part: &str,
    tool: &str,
    state: serde_json::Value,
) -> (&'static str, serde_json::Value) {
    k_part(
        message,
        part,
        json!({"type": "tool", "callID": "call_1", "tool": tool, "state": state}),
    )
}
