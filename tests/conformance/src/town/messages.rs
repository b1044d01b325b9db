//! The streamed message events a conversation is rebuilt from, and the
//! turns `GET /conversation` shows.

use crate::{Value, json};

/// The three events a user's message makes: `message.created`, one
/// `message_part.updated` with the full text, `message.completed`.
pub fn user_message(session: Option<&str>, id: &str, text: &str) -> Vec<Value> {
    let info = json!({"id": id, "role": "user"});
    let part = json!({"id": format!("{id}-part"), "type": "text", "text": text});
    vec![
        event("message.created", session, json!({ "info": info })),
        event(
            "message_part.updated",
            session,
            json!({"info": info, "part": part}),
        ),
        event("message.completed", session, json!({ "info": info })),
    ]
}

/// The events a streamed message makes: `message.created`, one
/// `message_part.updated` per delta, `message.completed`. Its content is the
/// deltas concatenated.
pub fn streamed(session: Option<&str>, id: &str, role: &str, deltas: &[&str]) -> Vec<Value> {
    let mut all = vec![streamed_start(session, id, role)];
    all.extend(deltas.iter().map(|d| delta(session, id, role, d)));
    all.push(event(
        "message.completed",
        session,
        json!({"info": {"id": id, "role": role}}),
    ));
    all
}

/// `message.created` for message `id`.
pub fn streamed_start(session: Option<&str>, id: &str, role: &str) -> Value {
    event(
        "message.created",
        session,
        json!({"info": {"id": id, "role": role}}),
    )
}

/// One streamed `message_part.updated` delta of message `id`'s text part.
pub fn delta(session: Option<&str>, id: &str, role: &str, piece: &str) -> Value {
    event(
        "message_part.updated",
        session,
        json!({
            "info": {"id": id, "role": role},
            "part": {"id": format!("{id}-part"), "type": "text"},
            "delta": piece,
        }),
    )
}

/// An event of type `kind` with `data`, in `session` when given.
pub fn event(kind: &str, session: Option<&str>, data: Value) -> Value {
    match session {
        Some(session) => json!({"type": kind, "session_id": session, "data": data}),
        None => json!({"type": kind, "data": data}),
    }
}

/// A finished turn as `GET /conversation` shows it.
pub fn turn(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

/// The `turns` of a conversation (or of a dispatch's `prior_conversation`).
pub fn turns(conversation: &Value) -> Vec<Value> {
    conversation["turns"]
        .as_array()
        .unwrap_or_else(|| panic!("a conversation has a turns array: {conversation}"))
        .clone()
}
