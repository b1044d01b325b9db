//! What a rebuild hands out: turns and the conversation they make. The
//! HTTP contract's OpenAPI document describes both (schemars derives them),
//! so they live apart from the rebuild's logic.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::{SUMMARY_ROLE, SummaryNote, TURN_OVERHEAD_TOKENS, estimate_tokens};
use serde::{Deserialize, Serialize};

/// One message of the conversation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Who spoke: `user`, `assistant`, or whatever role the log gave.
    pub role: String,
    /// The message's text parts and tool lines, joined with `"\n"`.
    pub content: String,
    /// The message was cut off: it never finished, or a part of it stopped
    /// streaming before its final text.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unfinished: bool,
    /// This turn is a summary of older turns (role [`SUMMARY_ROLE`]), made
    /// by the configured summariser; only ever the first turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub summary: bool,
}

impl Turn {
    /// A turn of the conversation (not a summary).
    pub fn new(role: impl Into<String>, content: impl Into<String>, unfinished: bool) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
            unfinished,
            summary: false,
        }
    }

    /// The summary turn holding `content`.
    pub fn summary(content: impl Into<String>) -> Self {
        Self {
            role: SUMMARY_ROLE.to_owned(),
            content: content.into(),
            unfinished: false,
            summary: true,
        }
    }

    /// This turn's share of a budget: its content's [`estimate_tokens`] plus
    /// [`TURN_OVERHEAD_TOKENS`] for the role and separators.
    pub fn token_estimate(&self) -> u64 {
        estimate_tokens(&self.content).saturating_add(TURN_OVERHEAD_TOKENS)
    }
}

/// The conversation handed to a new container, newest turns last.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorConversation {
    /// The most recent turns that fit the budget, oldest first.
    pub turns: Vec<Turn>,
    /// Older turns left out to stay within the budget.
    pub omitted_turns: u64,
    /// The sum of [`Turn::token_estimate`] over `turns`.
    pub token_estimate: u64,
    /// Something was left out verbatim (`omitted_turns > 0`). Turns are
    /// never cut.
    pub truncated: bool,
    /// What became of the omitted turns' summary: present when turns were
    /// omitted and a summary was wanted (a dispatch, or a conversation read
    /// with `summarise=true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryNote>,
}

/// For `skip_serializing_if`, which passes a reference.
fn is_false(value: &bool) -> bool {
    !*value
}
