//! How much of the conversation is handed over: the most recent turns
//! within a turn count and a token estimate.

use super::{PriorConversation, Turn};
use crate::{DomainError, Refusal};
use serde::{Deserialize, Serialize};

/// Turns kept when the caller names no `max_turns`.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Estimated tokens kept when the caller names no `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u64 = 10_000;
/// The largest `max_turns` accepted.
pub const MAX_MAX_TURNS: u32 = 1_000;
/// The largest `max_tokens` accepted.
pub const MAX_MAX_TOKENS: u64 = 1_000_000;

/// Limits on the rebuilt conversation.
///
/// The most recent turns are kept while both limits hold; the first older
/// turn that would break one ends the selection (so the kept turns are always
/// a contiguous tail). The newest turn is always kept, whole, even when it
/// alone passes `max_tokens`: cutting it could hand an agent half an
/// instruction, and it is usually the user's message the dispatch delivers.
/// Only then does `token_estimate` exceed `max_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// At most this many turns (1..=1000).
    pub max_turns: u32,
    /// At most this many estimated tokens (1..=1,000,000), counted with
    /// [`Turn::token_estimate`].
    pub max_tokens: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            max_turns: DEFAULT_MAX_TURNS,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

impl Budget {
    /// A budget within the accepted ranges.
    ///
    /// # Errors
    ///
    /// [`DomainError::InvalidInput`] (`invalid_request`) when `max_turns` is
    /// not in 1..=1000 or `max_tokens` not in 1..=1,000,000.
    pub fn new(max_turns: u32, max_tokens: u64) -> Result<Self, DomainError> {
        if !(1..=MAX_MAX_TURNS).contains(&max_turns) {
            return Err(invalid(format!(
                "max_turns must be 1 to {MAX_MAX_TURNS}, got {max_turns}"
            )));
        }
        if !(1..=MAX_MAX_TOKENS).contains(&max_tokens) {
            return Err(invalid(format!(
                "max_tokens must be 1 to {MAX_MAX_TOKENS}, got {max_tokens}"
            )));
        }
        Ok(Self {
            max_turns,
            max_tokens,
        })
    }

    /// A budget from optional query parameters, defaults filling the gaps.
    ///
    /// # Errors
    ///
    /// As [`Budget::new`].
    pub fn from_options(
        max_turns: Option<u32>,
        max_tokens: Option<u64>,
    ) -> Result<Self, DomainError> {
        Self::new(
            max_turns.unwrap_or(DEFAULT_MAX_TURNS),
            max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        )
    }
}

fn invalid(message: String) -> DomainError {
    DomainError::InvalidInput(Refusal::new("invalid_request", message))
}

/// Keeps the newest turns of `turns` (oldest first) that fit `budget`.
pub(super) fn keep_recent(mut turns: Vec<Turn>, budget: &Budget) -> PriorConversation {
    let (kept, tokens) = fitting_tail(turns.iter(), budget);
    let omitted = turns.len() - kept;
    let kept_turns = turns.split_off(omitted);
    let omitted_turns = u64::try_from(omitted).unwrap_or(u64::MAX);
    PriorConversation {
        turns: kept_turns,
        omitted_turns,
        token_estimate: tokens,
        truncated: omitted_turns > 0,
        summary: None,
    }
}

/// How many of the newest `turns` (given oldest first) fit `budget`, and
/// their estimated tokens.
pub(super) fn fitting_tail<'a>(
    turns: impl DoubleEndedIterator<Item = &'a Turn>,
    budget: &Budget,
) -> (usize, u64) {
    let max_turns = usize::try_from(budget.max_turns).unwrap_or(usize::MAX);
    let mut kept = 0_usize;
    let mut tokens = 0_u64;
    for turn in turns.rev() {
        let with_turn = tokens.saturating_add(turn.token_estimate());
        // The newest turn is kept whatever it costs; see `Budget`.
        let fits = kept < max_turns && with_turn <= budget.max_tokens;
        if kept > 0 && !fits {
            break;
        }
        kept += 1;
        tokens = with_turn;
    }
    (kept, tokens)
}
