//! Tokens and budget: estimates, bounds, and which turns the budget keeps.

use crate::support::{log, turn, unfinished, user_message};
use serde_json::json;
use stasis_domain::conversation::*;
use stasis_domain::event_log::Event;

#[test]
fn tokens_are_estimated_as_a_quarter_of_the_characters_rounded_up() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("a"), 1);
    assert_eq!(estimate_tokens("abcd"), 1);
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens("héllo wörld"), 3, "characters, not bytes");
    assert_eq!(estimate_tokens("😀😀😀😀"), 1);
}

#[test]
fn a_turn_costs_its_content_plus_a_fixed_overhead() {
    assert_eq!(TURN_OVERHEAD_TOKENS, 4);
    assert_eq!(turn("user", "abcdefgh").token_estimate(), 2 + 4);
    assert_eq!(
        turn("a-very-long-role-name", "").token_estimate(),
        TURN_OVERHEAD_TOKENS
    );
}

#[test]
fn the_default_budget_is_50_turns_and_10000_tokens() {
    assert_eq!(
        Budget::default(),
        Budget {
            max_turns: 50,
            max_tokens: 10_000
        }
    );
    assert_eq!(Budget::from_options(None, None), Ok(Budget::default()));
    assert_eq!(
        Budget::from_options(Some(3), None),
        Ok(Budget {
            max_turns: 3,
            max_tokens: 10_000
        })
    );
}

#[test]
fn a_budget_accepts_its_bounds() {
    for (turns, tokens) in [(1, 1), (1000, 1_000_000), (50, 10_000)] {
        let budget = Budget::new(turns, tokens).expect("in range");
        assert_eq!((budget.max_turns, budget.max_tokens), (turns, tokens));
    }
}

#[test]
fn a_budget_out_of_range_is_an_invalid_request() {
    for (turns, tokens) in [
        (0, 10),
        (1001, 10),
        (10, 0),
        (10, 1_000_001),
        (u32::MAX, u64::MAX),
    ] {
        let err = Budget::new(turns, tokens).expect_err("out of range");
        assert_eq!(err.code(), "invalid_request", "{turns} {tokens}");
        assert!(matches!(err, stasis_domain::DomainError::InvalidInput(_)));
    }
    let err = Budget::from_options(Some(0), None).expect_err("zero turns");
    assert!(err.to_string().contains("max_turns"), "{err}");
    let err = Budget::from_options(None, Some(0)).expect_err("zero tokens");
    assert!(err.to_string().contains("max_tokens"), "{err}");
}

fn numbered_user_messages(count: usize, text_len: usize) -> Vec<Event> {
    let entries: Vec<_> = (0..count)
        .map(|i| user_message(&format!("m{i}"), &format!("{i:0>text_len$}")))
        .collect();
    log(&entries)
}

#[test]
fn the_most_recent_turns_within_max_turns_are_kept() {
    let events = numbered_user_messages(10, 4);
    let rebuilt = rebuild(&events, &Budget::new(3, 1_000_000).expect("valid"));
    let contents: Vec<_> = rebuilt.turns.iter().map(|t| t.content.as_str()).collect();
    assert_eq!(contents, ["0007", "0008", "0009"]);
    assert_eq!(rebuilt.omitted_turns, 7);
    assert!(rebuilt.truncated);
    assert_eq!(rebuilt.token_estimate, 3 * (1 + TURN_OVERHEAD_TOKENS));
}

#[test]
fn the_most_recent_turns_within_max_tokens_are_kept() {
    // Each turn: 8 chars → 2 tokens + 4 overhead = 6.
    let events = numbered_user_messages(10, 8);
    let rebuilt = rebuild(&events, &Budget::new(50, 20).expect("valid"));
    assert_eq!(rebuilt.turns.len(), 3);
    assert_eq!(rebuilt.token_estimate, 18);
    assert_eq!(rebuilt.omitted_turns, 7);
    assert!(rebuilt.truncated);
    assert_eq!(rebuilt.turns[2].content, "00000009");
}

#[test]
fn a_budget_exactly_met_keeps_everything() {
    let events = numbered_user_messages(4, 8);
    let rebuilt = rebuild(&events, &Budget::new(4, 24).expect("valid"));
    assert_eq!(rebuilt.turns.len(), 4);
    assert_eq!(rebuilt.token_estimate, 24);
    assert_eq!(rebuilt.omitted_turns, 0);
    assert!(!rebuilt.truncated);
}

#[test]
fn selection_stops_at_the_first_older_turn_that_does_not_fit() {
    // Oldest to newest costs: 5, 100+, 5. The small oldest turn would fit
    // but is not reached: the kept turns are a contiguous tail.
    let events = log(&[
        user_message("a", "a"),
        user_message("b", &"b".repeat(400)),
        user_message("c", "c"),
    ]);
    let rebuilt = rebuild(&events, &Budget::new(50, 50).expect("valid"));
    assert_eq!(rebuilt.turns, vec![turn("user", "c")]);
    assert_eq!(rebuilt.omitted_turns, 2);
}

#[test]
fn an_over_long_newest_turn_is_kept_whole() {
    let long = "x".repeat(1_000);
    let events = log(&[user_message("a", "old"), user_message("b", &long)]);
    let rebuilt = rebuild(&events, &Budget::new(50, 10).expect("valid"));
    assert_eq!(rebuilt.turns, vec![turn("user", &long)]);
    assert_eq!(rebuilt.token_estimate, 250 + TURN_OVERHEAD_TOKENS);
    assert_eq!(rebuilt.omitted_turns, 1);
    assert!(rebuilt.truncated);

    let alone = rebuild(
        &log(&[user_message("b", &long)]),
        &Budget::new(1, 1).expect("valid"),
    );
    assert_eq!(alone.turns.len(), 1);
    assert!(!alone.truncated, "nothing was left out");
}

#[test]
fn unfinished_is_serialized_only_when_true() {
    let rebuilt = PriorConversation {
        turns: vec![turn("user", "q"), unfinished("assistant", "a")],
        omitted_turns: 2,
        token_estimate: 10,
        truncated: true,
        summary: None,
    };
    let json = serde_json::to_value(&rebuilt).expect("serializes");
    assert_eq!(
        json,
        json!({
            "turns": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "unfinished": true}
            ],
            "omitted_turns": 2,
            "token_estimate": 10,
            "truncated": true
        })
    );
    let back: PriorConversation = serde_json::from_value(json).expect("deserializes");
    assert_eq!(back, rebuilt);
}
