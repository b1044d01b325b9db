//! Each recorded conversation, rebuilt and compared with kilo's own view.

use crate::capture::{Capture, Twins, load};
use crate::kilo_view::split_tool_lines;
use stasis_domain::conversation::{Budget, MAX_MAX_TOKENS, MAX_MAX_TURNS, Turn, rebuild};
use stasis_domain::event_log::{self, AppendBatch, AppendSettings, NewEvent};
use stasis_domain::recall;
use stasis_sqlite::SqliteStore;

fn everything() -> Budget {
    Budget::new(MAX_MAX_TURNS, MAX_MAX_TOKENS).expect("the largest budget")
}

/// The turns of `capture` as stored with twins kept as sent, after checking
/// that every other way of storing them, and the agent's real log read back
/// from SQLite, give the same.
fn rebuilt(capture: &Capture) -> Vec<Turn> {
    let turns = rebuild(&capture.stored(Twins::AsSent), &everything()).turns;
    for twins in [Twins::Dropped, Twins::Unwrapped] {
        let other = rebuild(&capture.stored(twins), &everything()).turns;
        assert_eq!(other, turns, "{}: twins {twins:?}", capture.name);
    }
    assert_eq!(
        from_the_log(capture),
        turns,
        "{}: through the log",
        capture.name
    );
    turns
}

/// The conversation the agent's object hands out, with the capture appended
/// to a real event log.
fn from_the_log(capture: &Capture) -> Vec<Turn> {
    let store = SqliteStore::in_memory().expect("sqlite");
    event_log::migrate(&store).expect("schema");
    let events = capture
        .stored(Twins::AsSent)
        .into_iter()
        .map(|e| NewEvent::new(&e.event_type, e.session_id.as_deref(), &e.data))
        .collect();
    event_log::append(&store, &AppendBatch::new(events), &AppendSettings::new(0)).expect("append");
    recall::conversation(&store, &everything(), None)
        .expect("rebuild")
        .turns
}

/// For every message kilo shows, the turn with its role and finished text,
/// in order; a message kilo had not finished is unfinished and its turn
/// holds at least what kilo kept.
fn assert_matches_kilo(capture: &Capture, turns: &[Turn]) {
    let shown: Vec<_> = capture.messages.iter().filter(|m| m.has_a_turn()).collect();
    assert_eq!(turns.len(), shown.len(), "{}: {turns:#?}", capture.name);
    for (turn, message) in turns.iter().zip(shown) {
        let (text, tools) = split_tool_lines(&turn.content);
        let what = format!("{} {}: {turn:?}", capture.name, message.info.id);
        assert_eq!(turn.role, message.info.role, "{what}");
        assert_eq!(tools.len(), message.tool_count(), "{what}");
        if message.is_finished() {
            assert_eq!(text, message.text(), "{what}");
            assert!(!turn.unfinished, "{what}");
        } else {
            assert!(text.starts_with(&message.text()), "{what}");
            assert!(turn.unfinished, "{what}");
        }
    }
}

#[test]
fn a_plain_conversation_rebuilds_as_kilo_shows_it() {
    let capture = load("plain");
    let turns = rebuilt(&capture);
    assert_matches_kilo(&capture, &turns);
    assert_eq!(turns.len(), 6);
    assert_eq!(turns[1].content, "First coffee, then the release notes.");
    assert!(turns.iter().all(|turn| !turn.unfinished));
}

#[test]
fn a_tool_call_is_one_line_in_its_own_assistant_turn() {
    let capture = load("tool");
    let turns = rebuilt(&capture);
    assert_matches_kilo(&capture, &turns);
    let contents: Vec<&str> = turns.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(
        contents,
        [
            "Please run the build check",
            "[tool bash: Print hi — completed]",
            "The command printed hi.",
            "Anything else?",
            "No, all done.",
        ]
    );
}

#[test]
fn a_reply_cut_by_sigkill_ends_the_conversation_unfinished_with_what_streamed() {
    let capture = load("cut");
    let turns = rebuilt(&capture);
    assert_matches_kilo(&capture, &turns);
    let (last, before) = turns.split_last().expect("turns");
    assert!(before.iter().all(|turn| !turn.unfinished), "{before:?}");
    // kilo itself kept none of it: deltas are never persisted.
    let kilo_last = capture.messages.last().expect("kilo's messages");
    assert_eq!(kilo_last.text(), "");
    let streamed: String = capture
        .data_of("message.part.delta")
        .iter()
        .filter(|delta| delta["messageID"] == kilo_last.info.id.as_str())
        .filter_map(|delta| delta["delta"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(streamed, "Here is the long summary of");
    assert_eq!(last.role, "assistant");
    assert_eq!(last.content, streamed);
    assert!(last.unfinished);
}

#[test]
fn reverted_messages_are_not_rebuilt() {
    let capture = load("revert");
    let turns = rebuilt(&capture);
    assert_matches_kilo(&capture, &turns);
    let removed = capture.data_of("message.removed");
    assert_eq!(removed.len(), 2, "the reverted question and its answer");
    for gone in &removed {
        let id = gone["messageID"].as_str().expect("an id");
        assert!(capture.messages.iter().all(|m| m.info.id != id), "{id}");
    }
    let contents: Vec<&str> = turns.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(
        contents,
        ["Say first", "One.", "Say something instead", "Three."]
    );
}

#[test]
fn every_capture_holds_sync_twins_and_they_change_nothing() {
    for name in ["plain", "tool", "cut", "revert"] {
        let capture = load(name);
        let twins = capture.stored(Twins::AsSent).len() - capture.stored(Twins::Dropped).len();
        assert!(twins > 10, "{name}: {twins} twins");
        // `rebuilt` compares every way of storing them.
        let _ = rebuilt(&capture);
    }
}
