//! Which events count: where ids and roles are read from, and what is skipped.

use crate::support::{completed, created, event, log, turn, turns, unfinished, user_message};
use serde_json::json;
use stasis_domain::conversation::*;

#[test]
fn a_user_message_logged_by_stasis_is_one_complete_turn() {
    let events = log(&[user_message("m1", "Where were we?")]);
    assert_eq!(turns(&events), vec![turn("user", "Where were we?")]);
}

#[test]
fn message_id_and_role_may_be_top_level_fields() {
    let events = log(&[
        (
            "message.created",
            json!({"message_id": "m1", "role": "assistant"}),
        ),
        (
            "message_part.updated",
            json!({"message_id": "m1", "part_id": "p", "delta": "ok"}),
        ),
        ("message.completed", json!({"message_id": "m1"})),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "ok")]);
}

#[test]
fn the_message_id_may_come_from_the_part() {
    let events = log(&[
        (
            "message.part.updated",
            json!({"part": {"id": "p", "messageID": "m1", "type": "text", "text": "a"}}),
        ),
        (
            "message.part.updated",
            json!({"part": {"id": "q", "message_id": "m1", "text": "b"}}),
        ),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "a\nb")]);
}

#[test]
fn info_id_wins_over_message_id() {
    let events = log(&[
        (
            "message.updated",
            json!({"info": {"id": "m1", "role": "user"}, "message_id": "other", "part": {"text": "x"}}),
        ),
        ("message.completed", json!({"message_id": "m1"})),
    ]);
    assert_eq!(turns(&events), vec![turn("user", "x")], "m1 only, complete");
}

#[test]
fn events_of_other_types_are_ignored() {
    let events = log(&[
        ("tool.called", json!({"message_id": "m1", "delta": "no"})),
        (
            "session.created",
            json!({"info": {"id": "m2", "role": "user"}}),
        ),
        ("message", json!({"message_id": "m3", "delta": "no"})),
        user_message("m4", "yes"),
    ]);
    assert_eq!(turns(&events), vec![turn("user", "yes")]);
}

#[test]
fn malformed_events_are_skipped() {
    let events = [
        event(1, "message.created", "not json"),
        event(2, "message.created", r#"{"message_id":"m1","delta":"x""#),
        event(3, "message_part.updated", r#"["m1", "user"]"#),
        event(4, "message_part.updated", r#"{"delta":"no id"}"#),
        event(
            5,
            "message_part.updated",
            r#"{"message_id":"","delta":"empty id"}"#,
        ),
        event(
            6,
            "message_part.updated",
            r#"{"message_id":7,"delta":"numeric id"}"#,
        ),
        event(
            7,
            "message_part.updated",
            r#"{"message_id":"m1","delta":7}"#,
        ),
        event(
            8,
            "message_part.updated",
            r#"{"message_id":"m1","part":{"id":"p","text":["x"]}}"#,
        ),
        event(9, "message.completed", r#"{"info":"m1"}"#),
        event(10, "message.completed", r#"{"info":{"id":"m1","role":5}}"#),
        event(
            11,
            "message.completed",
            r#"{"message_id":"m1","message_id":"m1"}"#,
        ),
        event(12, "message.completed", ""),
        event(13, "message.completed", "null"),
        event(
            14,
            "message_part.updated",
            r#"{"message_id":"m2","delta":"kept"}"#,
        ),
    ];
    let rebuilt = rebuild(&events, &Budget::default());
    assert_eq!(rebuilt.turns, vec![unfinished("assistant", "kept")]);
}

#[test]
fn a_skipped_event_does_not_register_its_message() {
    // Event 1 is malformed, so m1 first appears after m2.
    let events = [
        event(1, "message.created", r#"{"message_id":"m1","role":7}"#),
        event(
            2,
            "message.completed",
            r#"{"message_id":"m2","part":{"text":"two"}}"#,
        ),
        event(
            3,
            "message.completed",
            r#"{"message_id":"m1","part":{"text":"one"}}"#,
        ),
    ];
    let contents: Vec<_> = turns(&events).into_iter().map(|t| t.content).collect();
    assert_eq!(contents, ["two", "one"]);
}

#[test]
fn json_escapes_in_text_are_decoded() {
    let events = [event(
        1,
        "message.completed",
        r#"{"info":{"id":"m1","role":"user"},"part":{"id":"p","text":"line\nnext \"q\" \u00e9 \ud83d\ude00"}}"#,
    )];
    assert_eq!(turns(&events), vec![turn("user", "line\nnext \"q\" é 😀")]);
}

#[test]
fn unknown_fields_are_ignored() {
    let events = log(&[(
        "message.completed",
        json!({"type": "x", "info": {"id": "m1", "role": "user", "time": {"created": 1}, "tokens": [1, 2]},
               "part": {"id": "p", "text": "hi", "synthetic": false, "time": {"start": 1}}, "extra": null}),
    )]);
    assert_eq!(turns(&events), vec![turn("user", "hi")]);
}

#[test]
fn parts_that_are_not_text_add_nothing() {
    let events = log(&[
        created("m1", "assistant"),
        (
            "message.part.updated",
            json!({"message_id": "m1", "part": {"id": "r", "type": "reasoning", "text": "thinking"}}),
        ),
        (
            "message.part.updated",
            json!({"message_id": "m1", "part": {"id": "r", "type": "reasoning"}, "delta": "more"}),
        ),
        (
            "message.part.updated",
            json!({"message_id": "m1", "part": {"id": "t", "type": "tool", "text": "ls"}}),
        ),
        (
            "message.part.updated",
            json!({"message_id": "m1", "part": {"id": "p", "type": "text", "text": "Done."}}),
        ),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Done.")]);
}
