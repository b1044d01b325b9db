//! Older turns summarised, not only cut.
//!
//! When a rebuild must omit turns and a summary is wanted, the budget sets
//! aside an allowance for one summary turn ([`allowance`]: a fifth of
//! `max_tokens`, at most [`SUMMARY_MAX_TOKENS`]) and one of its `max_turns`;
//! the newest turns that fit the rest stay verbatim, and every older turn is
//! what the summary covers. The summary turn goes first (role
//! [`SUMMARY_ROLE`], `summary: true`) and counts within the budget.
//!
//! Summaries are incremental: the cache ([`crate::recall`]) holds one per
//! conversation scope and budget ([`SummaryKey`]) with the watermark it
//! covers (`through_seq`: the first seq of the newest turn it covers; turns
//! come in order of their first event, so "covered" is `first_seq <=
//! through_seq`). [`plan`] places a current summary at once, or hands the
//! runtime the [`SummaryWork`]: the previous summary and only the turns
//! omitted since. Nothing here calls a model: the domain has no I/O.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::budget::{fitting_tail, keep_recent};
use super::{Budget, CHARS_PER_TOKEN, PriorConversation, TURN_OVERHEAD_TOKENS, Turn};
use serde::{Deserialize, Serialize};

/// The role of the summary turn.
pub const SUMMARY_ROLE: &str = "summary";
/// The most estimated tokens a summary turn may take.
pub const SUMMARY_MAX_TOKENS: u64 = 1_000;
/// Below this allowance a summary would say nothing useful: no room.
pub const SUMMARY_MIN_TOKENS: u64 = 32;
/// A summary takes at most `max_tokens / SUMMARY_SHARE`.
const SUMMARY_SHARE: u64 = 5;

/// A turn with the seq of its message's first event (its place in the log).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeqTurn {
    /// The seq of the first event of the turn's message.
    pub first_seq: u64,
    /// The turn.
    pub turn: Turn,
}

/// What a cached summary is for: a conversation scope and its budget (a
/// different budget omits different turns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryKey {
    /// One session's conversation, or `None`: every session's.
    pub session_id: Option<String>,
    /// The budget of the rebuild.
    pub budget: Budget,
}

/// A summary and the watermark it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSummary {
    /// The summary's text.
    pub text: String,
    /// The first seq of the newest turn it covers.
    pub through_seq: u64,
}

/// What the summariser must do before a summary can be placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryWork {
    /// Where the result is cached.
    pub key: SummaryKey,
    /// The cached summary the new turns extend, if any.
    pub previous: Option<StoredSummary>,
    /// The turns omitted since `previous` (all omitted turns without one),
    /// oldest first.
    pub turns: Vec<SeqTurn>,
    /// The watermark the finished summary covers.
    pub through_seq: u64,
    /// How many of the cut conversation's newest turns stay beside the
    /// summary.
    pub kept_turns: u64,
    /// The summary turn's allowance, in estimated tokens.
    pub max_tokens: u64,
}

/// What became of a rebuild's summary.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryStatus {
    /// The cached summary was current: placed first, no model called.
    Cached,
    /// The summariser extended the summary now: placed first, and cached.
    Made,
    /// No summariser is configured: the omitted turns are cut.
    NotConfigured,
    /// The summariser answered with an error: cut.
    Failed,
    /// The summariser missed its deadline: cut.
    Timeout,
    /// The newly omitted turns needed more summariser calls than one
    /// rebuild makes: cut; what was summarised is cached, and the next
    /// rebuild goes on from there.
    Partial,
    /// The budget leaves no room for a summary turn (`max_turns` 1, or
    /// `max_tokens` under 160): cut.
    NoRoom,
}

/// The `summary` field of a rebuilt conversation.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryNote {
    /// What happened.
    pub status: SummaryStatus,
    /// The watermark of the summary placed first (`cached`, `made`): the
    /// first seq of the newest turn it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_seq: Option<u64>,
    /// Why the turns were cut (`failed`, `timeout`, `partial`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl SummaryNote {
    /// A note with no watermark and no detail.
    pub fn status(status: SummaryStatus) -> Self {
        Self {
            status,
            through_seq: None,
            detail: None,
        }
    }

    /// A note that says why the turns were cut.
    pub fn cut(status: SummaryStatus, detail: impl Into<String>) -> Self {
        Self {
            status,
            through_seq: None,
            detail: Some(detail.into()),
        }
    }
}

/// A rebuild with summaries wanted: the conversation, and what the
/// summariser must do when the cache is not current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recalled {
    /// With `work`: the conversation cut as without a summariser (the
    /// fallback). Without: the answer (a cached summary placed, or nothing
    /// to summarise).
    pub conversation: PriorConversation,
    /// The summariser's work, when a summary is needed and not cached.
    pub work: Option<SummaryWork>,
}

/// The estimated tokens `budget` sets aside for a summary turn, or `None`
/// when it leaves no room (`max_turns` 1, or an allowance under
/// [`SUMMARY_MIN_TOKENS`]).
pub fn allowance(budget: &Budget) -> Option<u64> {
    let tokens = (budget.max_tokens / SUMMARY_SHARE).min(SUMMARY_MAX_TOKENS);
    (budget.max_turns >= 2 && tokens >= SUMMARY_MIN_TOKENS).then_some(tokens)
}

/// The rebuild of `turns` within `budget` with the omitted turns
/// summarised: `cached` placed first when it covers exactly the omitted
/// turns, else the cut conversation and the work that would extend it.
pub fn plan(
    turns: Vec<SeqTurn>,
    budget: &Budget,
    key: SummaryKey,
    cached: Option<StoredSummary>,
) -> Recalled {
    let (kept_whole, _) = fitting_tail(turns.iter().map(|t| &t.turn), budget);
    let omits_some = kept_whole < turns.len();
    let room = allowance(budget).filter(|_| omits_some);
    let Some(max_tokens) = room else {
        let mut conversation = keep_recent(without_seqs(turns), budget);
        if omits_some {
            conversation.summary = Some(SummaryNote::status(SummaryStatus::NoRoom));
        }
        return Recalled {
            conversation,
            work: None,
        };
    };
    let beside_summary = Budget {
        max_turns: budget.max_turns - 1,
        max_tokens: budget.max_tokens - max_tokens,
    };
    let (kept, _) = fitting_tail(turns.iter().map(|t| &t.turn), &beside_summary);
    let omitted = turns.len() - kept;
    // `kept <= kept_whole < len`, so at least one turn is omitted.
    let through_seq = turns
        .get(omitted.wrapping_sub(1))
        .map_or(0, |t| t.first_seq);
    let kept_turns = u64::try_from(kept).unwrap_or(u64::MAX);
    let (new_turns, previous) = match cached {
        Some(cached) if cached.through_seq == through_seq => {
            let cut = keep_recent(without_seqs(turns), budget);
            let note = SummaryNote {
                status: SummaryStatus::Cached,
                through_seq: Some(through_seq),
                detail: None,
            };
            let conversation = place_summary(cut, kept_turns, &cached.text, max_tokens, note);
            return Recalled {
                conversation,
                work: None,
            };
        }
        // Extend it with the turns omitted since.
        Some(cached) if cached.through_seq < through_seq => {
            let since = turns[..omitted]
                .iter()
                .filter(|t| t.first_seq > cached.through_seq)
                .cloned()
                .collect();
            (since, Some(cached))
        }
        // None, or one that covers turns this budget keeps (a turn was
        // removed since): start again.
        _ => (turns[..omitted].to_vec(), None),
    };
    let work = SummaryWork {
        key,
        previous,
        turns: new_turns,
        through_seq,
        kept_turns,
        max_tokens,
    };
    Recalled {
        conversation: keep_recent(without_seqs(turns), budget),
        work: Some(work),
    }
}

/// `cut` with only its `kept_turns` newest turns verbatim, the summary
/// `text` (fitted to `max_tokens`) first, and `note`.
pub fn place_summary(
    mut cut: PriorConversation,
    kept_turns: u64,
    text: &str,
    max_tokens: u64,
    note: SummaryNote,
) -> PriorConversation {
    let kept = usize::try_from(kept_turns).unwrap_or(usize::MAX);
    let dropped = cut.turns.len().saturating_sub(kept);
    cut.turns.drain(..dropped);
    cut.turns
        .insert(0, Turn::summary(fit_summary(text, max_tokens)));
    cut.omitted_turns = cut
        .omitted_turns
        .saturating_add(u64::try_from(dropped).unwrap_or(u64::MAX));
    cut.token_estimate = cut.turns.iter().map(Turn::token_estimate).sum();
    cut.truncated = cut.omitted_turns > 0;
    cut.summary = Some(note);
    cut
}

/// `text` trimmed, and cut (ending in `…`) so that its turn's estimate
/// stays within `max_tokens`.
pub fn fit_summary(text: &str, max_tokens: u64) -> String {
    let text = text.trim();
    let max_chars = max_tokens
        .saturating_sub(TURN_OVERHEAD_TOKENS)
        .saturating_mul(CHARS_PER_TOKEN);
    let max_chars = usize::try_from(max_chars).unwrap_or(usize::MAX);
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let mut fitted: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    fitted.push('…');
    fitted
}

fn without_seqs(turns: Vec<SeqTurn>) -> Vec<Turn> {
    turns.into_iter().map(|t| t.turn).collect()
}
