//! How a message is assembled over its life: completion, unfinished messages,
//! roles, messages without text, repeated log entries, long streams.

use crate::support::{
    completed, created, delta, event, full, log, turn, turns, unfinished, user_message,
};
use serde_json::json;
use stasis_domain::conversation::*;

#[test]
fn turns_follow_each_messages_first_appearance_not_its_completion() {
    let events = log(&[
        delta("m1", "p", "first"),
        user_message("m2", "second"),
        completed("m1"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("assistant", "first"), turn("user", "second")]
    );
}

#[test]
fn message_completed_and_assistant_completed_both_end_a_message() {
    let events = log(&[
        delta("m1", "p", "one"),
        ("message.completed", json!({"message_id": "m1"})),
        delta("m2", "p", "two"),
        ("assistant.completed", json!({"message_id": "m2"})),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("assistant", "one"), turn("assistant", "two")]
    );
}

#[test]
fn a_completing_event_may_carry_the_last_delta() {
    let events = log(&[
        delta("m1", "p", "Hel"),
        (
            "assistant.completed",
            json!({"message_id": "m1", "part_id": "p", "delta": "lo"}),
        ),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello")]);
}

#[test]
fn deltas_after_completion_are_ignored_as_late_retries() {
    let events = log(&[
        delta("m1", "p", "Hello"),
        completed("m1"),
        delta("m1", "p", "Hello"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello")]);
}

#[test]
fn full_texts_after_completion_still_apply() {
    let events = log(&[
        delta("m1", "p", "Helo"),
        completed("m1"),
        full("m1", "p", "Hello"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello")]);
}

#[test]
fn a_message_that_never_ended_is_kept_and_marked_unfinished() {
    let events = log(&[
        user_message("m1", "Write a poem"),
        created("m2", "assistant"),
        delta("m2", "p", "Roses are"),
    ]);
    assert_eq!(
        turns(&events),
        vec![
            turn("user", "Write a poem"),
            unfinished("assistant", "Roses are")
        ]
    );
}

#[test]
fn every_message_that_never_ended_is_marked_not_only_the_last() {
    let events = log(&[
        delta("m1", "p", "cut off"),
        user_message("m2", "hello?"),
        delta("m3", "p", "typing"),
    ]);
    assert_eq!(
        turns(&events),
        vec![
            unfinished("assistant", "cut off"),
            turn("user", "hello?"),
            unfinished("assistant", "typing"),
        ]
    );
}

#[test]
fn a_cut_reply_taken_up_again_by_a_later_whole_reply_is_no_longer_unfinished() {
    let events = log(&[
        user_message("m1", "Write a poem"),
        delta("m2", "p", "Roses are"),
        user_message("m3", "Continue your cut reply"),
        created("m4", "assistant"),
        full("m4", "p", "Roses are red."),
        completed("m4"),
    ]);
    assert_eq!(
        turns(&events),
        vec![
            turn("user", "Write a poem"),
            turn("assistant", "Roses are"),
            turn("user", "Continue your cut reply"),
            turn("assistant", "Roses are red."),
        ]
    );
    // Cut again: the later reply is no whole one, so nothing is taken up.
    let cut_twice = log(&[
        delta("m2", "p", "Roses are"),
        user_message("m3", "Continue"),
        delta("m4", "p", "Roses"),
    ]);
    assert_eq!(
        turns(&cut_twice),
        vec![
            unfinished("assistant", "Roses are"),
            turn("user", "Continue"),
            unfinished("assistant", "Roses"),
        ]
    );
}

#[test]
fn a_whole_reply_in_another_session_leaves_a_cut_reply_unfinished() {
    let mut events = log(&[
        delta("m1", "p", "cut off"),
        created("m2", "assistant"),
        full("m2", "p", "elsewhere"),
        completed("m2"),
    ]);
    for (index, event) in events.iter_mut().enumerate() {
        event.session_id = Some(if index == 0 { "ses-a" } else { "ses-b" }.to_owned());
    }
    assert_eq!(
        turns(&events),
        vec![
            unfinished("assistant", "cut off"),
            turn("assistant", "elsewhere")
        ]
    );
}

#[test]
fn a_role_given_later_applies_to_the_whole_message() {
    let events = log(&[
        delta("m1", "p", "hi"),
        (
            "message.updated",
            json!({"info": {"id": "m1", "role": "user"}}),
        ),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("user", "hi")]);
}

#[test]
fn the_latest_role_wins_and_an_empty_role_is_no_role() {
    let events = log(&[
        created("m1", "user"),
        (
            "message.updated",
            json!({"message_id": "m1", "role": "system"}),
        ),
        ("message.updated", json!({"message_id": "m1", "role": ""})),
        ("message.updated", json!({"message_id": "m1", "role": null})),
        full("m1", "p", "x"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("system", "x")]);
}

#[test]
fn a_message_whose_role_is_never_given_is_the_assistants() {
    let events = log(&[delta("m1", "p", "who am I"), completed("m1")]);
    assert_eq!(turns(&events), vec![turn(UNKNOWN_ROLE, "who am I")]);
    assert_eq!(UNKNOWN_ROLE, "assistant");
}

#[test]
fn messages_without_text_are_dropped() {
    let events = log(&[
        created("m1", "assistant"),
        completed("m1"),
        created("m2", "user"),
        full("m2", "p", ""),
        ("message.completed", json!({"message_id": "m2"})),
        delta("m3", "p", ""),
        user_message("m4", "only me"),
    ]);
    let rebuilt = rebuild(&events, &Budget::default());
    assert_eq!(rebuilt.turns, vec![turn("user", "only me")]);
    assert_eq!(
        rebuilt.omitted_turns, 0,
        "dropped messages are not omitted turns"
    );
}

#[test]
fn the_same_log_entry_twice_in_a_row_is_read_once() {
    let first = event(
        1,
        "message_part.updated",
        r#"{"message_id":"m1","delta":"ab"}"#,
    );
    let events = [
        first.clone(),
        first,
        event(
            2,
            "message_part.updated",
            r#"{"message_id":"m1","delta":"ab"}"#,
        ),
    ];
    assert_eq!(turns(&events), vec![unfinished("assistant", "abab")]);
}

#[test]
fn no_events_make_an_empty_conversation() {
    assert_eq!(
        rebuild(&[], &Budget::default()),
        PriorConversation::default()
    );
}

#[test]
fn a_long_stream_is_rebuilt_in_full() {
    let mut events = vec![event(
        1,
        "message.created",
        r#"{"message_id":"m","role":"assistant"}"#,
    )];
    events.extend((2..=20_000).map(|seq| {
        event(
            seq,
            "message_part.updated",
            r#"{"message_id":"m","part_id":"p","delta":"ab"}"#,
        )
    }));
    let rebuilt = rebuild(&events, &Budget::new(1, 1_000_000).expect("valid budget"));
    assert_eq!(rebuilt.turns.len(), 1);
    assert_eq!(rebuilt.turns[0].content.len(), 2 * 19_999);
}
