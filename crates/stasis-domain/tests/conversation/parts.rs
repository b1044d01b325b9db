//! How a message is assembled from its parts: deltas, full texts, their order.

use crate::support::{completed, created, delta, full, log, turn, turns, user_message};
use serde_json::json;

#[test]
fn deltas_of_a_part_are_concatenated_in_seq_order() {
    let events = log(&[
        created("m1", "assistant"),
        delta("m1", "p", "Hel"),
        delta("m1", "p", "lo, "),
        delta("m1", "p", "world"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello, world")]);
}

#[test]
fn repeated_deltas_are_kept_since_streams_may_repeat_text() {
    let events = log(&[
        delta("m1", "p", "a"),
        delta("m1", "p", "a"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "aa")]);
}

#[test]
fn deltas_may_name_their_part_with_part_id() {
    let events = log(&[
        (
            "message_part.updated",
            json!({"message_id": "m1", "part_id": "p", "delta": "ab"}),
        ),
        delta("m1", "p", "cd"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "abcd")]);
}

#[test]
fn deltas_without_a_part_id_form_one_unnamed_part() {
    let events = log(&[
        (
            "message_part.updated",
            json!({"message_id": "m1", "delta": "ab"}),
        ),
        delta("m1", "p", "named"),
        (
            "message_part.updated",
            json!({"message_id": "m1", "delta": "cd"}),
        ),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "abcd\nnamed")]);
}

#[test]
fn a_later_full_text_replaces_the_accumulated_deltas() {
    let events = log(&[
        delta("m1", "p", "Helo"),
        delta("m1", "p", " wrld"),
        full("m1", "p", "Hello world"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello world")]);
}

#[test]
fn the_latest_full_text_wins() {
    let events = log(&[
        full("m1", "p", "draft"),
        full("m1", "p", "final"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "final")]);
}

#[test]
fn deltas_after_a_full_text_append_to_it() {
    let events = log(&[
        full("m1", "p", "Hello"),
        delta("m1", "p", ", "),
        delta("m1", "p", "world"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello, world")]);
}

#[test]
fn a_repeated_full_text_does_not_duplicate() {
    let events = log(&[
        user_message("m1", "once"),
        user_message("m1", "once"),
        full("m2", "p", "answer"),
        full("m2", "p", "answer"),
        completed("m2"),
        full("m2", "p", "answer"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("user", "once"), turn("assistant", "answer")]
    );
}

#[test]
fn an_event_with_full_text_and_delta_uses_the_full_text() {
    let events = log(&[
        delta("m1", "p", "Hel"),
        (
            "message.part.updated",
            json!({"message_id": "m1", "part": {"id": "p", "text": "Hello"}, "delta": "lo"}),
        ),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "Hello")]);
}

#[test]
fn parts_are_ordered_by_first_appearance_and_joined_with_newlines() {
    let events = log(&[
        delta("m1", "part-2", "second "),
        delta("m1", "part-1", "first"),
        delta("m1", "part-2", "streamed"),
        full("m1", "part-1", "first, fixed"),
        completed("m1"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("assistant", "second streamed\nfirst, fixed")]
    );
}

#[test]
fn empty_parts_add_no_blank_lines() {
    let events = log(&[
        full("m1", "a", "one"),
        full("m1", "b", ""),
        full("m1", "c", "two"),
        completed("m1"),
    ]);
    assert_eq!(turns(&events), vec![turn("assistant", "one\ntwo")]);
}

#[test]
fn interleaved_messages_each_keep_their_own_text() {
    let events = log(&[
        created("a", "assistant"),
        created("b", "assistant"),
        delta("b", "p", "B1 "),
        delta("a", "p", "A1 "),
        delta("b", "p", "B2"),
        delta("a", "p", "A2"),
        completed("b"),
        completed("a"),
    ]);
    assert_eq!(
        turns(&events),
        vec![turn("assistant", "A1 A2"), turn("assistant", "B1 B2")]
    );
}
