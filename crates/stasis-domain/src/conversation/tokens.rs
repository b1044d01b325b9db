//! The token estimate budgets are measured in.
//!
//! No tokenizer runs here (the domain has no model), so the estimate is the
//! common rule of thumb for English text: one token per four characters,
//! rounded up, plus a fixed overhead per turn for its role and separators.
//! It is counted in Unicode scalar values, not bytes, so non-ASCII text is
//! not over-charged fourfold.

/// Characters (Unicode scalar values) per estimated token.
pub const CHARS_PER_TOKEN: u64 = 4;

/// Tokens charged per turn on top of its content: the role, the `": "` and
/// the blank line between turns.
pub const TURN_OVERHEAD_TOKENS: u64 = 4;

/// Estimated tokens of `text`: `ceil(chars / 4)`; `""` costs 0.
///
/// A turn costs this plus [`TURN_OVERHEAD_TOKENS`]; see
/// [`Turn::token_estimate`](super::Turn::token_estimate).
pub fn estimate_tokens(text: &str) -> u64 {
    let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    chars.div_ceil(CHARS_PER_TOKEN)
}
