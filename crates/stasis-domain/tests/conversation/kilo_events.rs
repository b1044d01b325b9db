//! kilo's own events (`message.updated`, `message.part.updated`,
//! `message.part.delta`, the removals), rule by rule.

use crate::support::{
    event, k_completed, k_delta, k_message, k_message_with, k_part, k_text_end, k_text_start,
    k_user_text, log, turn, turns, unfinished,
};
use serde_json::json;
use stasis_domain::conversation::*;

#[test]
fn a_real_turn_rebuilds_into_a_finished_user_and_assistant_turn() {
    let events = log(&[
        k_message("u1", "user"),
        k_user_text("u1", "p1", "Hello"),
        k_message("a1", "assistant"),
        k_part("a1", "s1", json!({"type": "step-start"})),
        k_text_start("a1", "p2"),
        k_delta("a1", "p2", "Hi"),
        k_delta("a1", "p2", " there"),
        k_text_end("a1", "p2", "Hi there"),
        k_part("a1", "s2", json!({"type": "step-finish", "reason": "stop"})),
        k_message_with("a1", json!({"finish": "stop"})),
        k_completed("a1"),
        // kilo announces the user's message again, with a summary.
        k_message_with("u1", json!({"role": "user", "summary": {"diffs": []}})),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("user", "Hello"), turn("assistant", "Hi there")]
    );
}

#[test]
fn a_user_message_is_finished_as_soon_as_it_appears() {
    let events = log(&[k_message("u1", "user"), k_user_text("u1", "p1", "Hi")]);
    assert_eq!(turns(&events), vec![turn("user", "Hi")]);
}

#[test]
fn an_assistant_message_finishes_on_completed_finish_or_error() {
    for info in [
        json!({"time": {"created": 1, "completed": 2}}),
        json!({"finish": "stop"}),
        json!({"finish": "tool-calls"}),
        json!({"error": {"name": "MessageAbortedError", "data": {}}}),
    ] {
        let events = log(&[
            k_message("a1", "assistant"),
            k_text_end("a1", "p", "Done"),
            k_message_with("a1", info.clone()),
        ]);
        assert_eq!(turns(&events), vec![turn("assistant", "Done")], "{info}");
    }
}

#[test]
fn an_assistant_message_with_only_created_is_unfinished() {
    let events = log(&[
        k_message_with("a1", json!({"finish": null, "error": null})),
        k_text_end("a1", "p", "Done"),
    ]);
    assert_eq!(turns(&events), vec![unfinished("assistant", "Done")]);
}

#[test]
fn a_reply_cut_mid_stream_keeps_its_deltas_and_is_unfinished() {
    let events = log(&[
        k_message("u1", "user"),
        k_user_text("u1", "p1", "Count"),
        k_message("a1", "assistant"),
        k_text_start("a1", "p2"),
        k_delta("a1", "p2", "one"),
        k_delta("a1", "p2", " two"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("user", "Count"), unfinished("assistant", "one two")]
    );
}

#[test]
fn a_part_whose_deltas_never_got_their_final_text_is_unfinished_even_in_a_finished_message() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_text_start("a1", "p"),
        k_delta("a1", "p", "half"),
        k_message_with("a1", json!({"error": {"name": "MessageAbortedError"}})),
    ]);
    assert_eq!(turns(&events), vec![unfinished("assistant", "half")]);
}

#[test]
fn the_final_text_wins_over_what_was_streamed() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_text_start("a1", "p"),
        k_delta("a1", "p", "Hello "),
        k_delta("a1", "p", "world \n"),
        k_text_end("a1", "p", "Hello world"),
        k_completed("a1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello world")]);
}

#[test]
fn a_delta_before_the_parts_first_update_is_kept() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_delta("a1", "p", "Hel"),
        k_text_start("a1", "p"),
        k_delta("a1", "p", "lo"),
    ]);
    assert_eq!(turns(&events), vec![unfinished("assistant", "Hello")]);
}

#[test]
fn a_not_final_text_that_is_not_a_prefix_replaces_the_stream() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_delta("a1", "p", "draft"),
        k_part(
            "a1",
            "p",
            json!({"type": "text", "text": "other", "time": {"start": 1}}),
        ),
        k_delta("a1", "p", "!"),
    ]);
    assert_eq!(turns(&events), vec![unfinished("assistant", "other!")]);
}

#[test]
fn deltas_of_other_fields_and_of_reasoning_add_nothing() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_part(
            "a1",
            "r",
            json!({"type": "reasoning", "text": "", "time": {"start": 1}}),
        ),
        k_delta("a1", "r", "thinking"),
        k_part(
            "a1",
            "r",
            json!({"type": "reasoning", "text": "thinking", "time": {"start": 1, "end": 2}}),
        ),
        (
            "message.part.delta",
            json!({"messageID": "a1", "partID": "p", "field": "metadata", "delta": "x"}),
        ),
        k_text_end("a1", "p", "Answer"),
        k_completed("a1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Answer")]);
}

#[test]
fn synthetic_and_ignored_text_parts_are_left_out() {
    let events = log(&[
        k_message("u1", "user"),
        k_user_text("u1", "p1", "Read this"),
        k_part(
            "u1",
            "p2",
            json!({"type": "text", "text": "<file>…</file>", "synthetic": true}),
        ),
        k_part(
            "u1",
            "p3",
            json!({"type": "text", "text": "hidden", "ignored": true}),
        ),
        k_part(
            "u1",
            "p4",
            json!({"type": "text", "text": "kept", "synthetic": false}),
        ),
    ]);
    assert_eq!(turns(&events), vec![turn("user", "Read this\nkept")]);
}

#[test]
fn a_removed_message_is_gone_and_stays_gone() {
    let events = log(&[
        k_message("u1", "user"),
        k_user_text("u1", "p1", "Keep"),
        k_message("u2", "user"),
        k_user_text("u2", "p2", "Revert me"),
        (
            "message.removed",
            json!({"sessionID": "s", "messageID": "u2"}),
        ),
        k_user_text("u2", "p2", "Revert me"),
    ]);
    assert_eq!(turns(&events), vec![turn("user", "Keep")]);
}

#[test]
fn a_removed_part_is_gone_and_the_rest_of_its_message_stays() {
    let events = log(&[
        k_message("a1", "assistant"),
        k_text_end("a1", "p1", "first"),
        k_text_end("a1", "p2", "second"),
        (
            "message.part.removed",
            json!({"sessionID": "s", "messageID": "a1", "partID": "p1"}),
        ),
        k_delta("a1", "p1", "late"),
        k_completed("a1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "second")]);
}

#[test]
fn sync_twins_are_not_read() {
    let twin = json!({"type": "sync", "syncEvent": {"type": "message.part.updated.1",
        "data": {"part": {"id": "p", "messageID": "m", "type": "text", "text": "twin"}}}});
    let events = [event(1, "sync", &twin.to_string())];
    assert!(!MESSAGE_EVENT_TYPES.contains(&"sync"));
    assert_eq!(turns(&events), vec![]);
}

#[test]
fn every_type_kilo_sends_for_a_conversation_is_read() {
    for kilo_type in [
        "message.updated",
        "message.part.updated",
        "message.part.delta",
        "message.removed",
        "message.part.removed",
    ] {
        assert!(MESSAGE_EVENT_TYPES.contains(&kilo_type), "{kilo_type}");
    }
}
