//! An agent's conversation, rebuilt from its event log.
//!
//! A new container gets the Mayor (or any agent) back with the conversation
//! it had; this module turns the logged message events into turns. It is a
//! pure function of the events, so both runtimes and every test get the same
//! answer.
//!
//! # Which events count
//!
//! `message.created`, `message.updated`, `message_part.updated`,
//! `message.part.updated`, `message.completed` and `assistant.completed`.
//! Every other type is ignored. Each of them may carry:
//!
//! - the message id: `data.info.id`, else `data.message_id`, else
//!   `data.part.message_id` (or `data.part.messageID`); an event without one
//!   is skipped;
//! - the role: `data.info.role`, else `data.role`;
//! - text: `data.part.text` is the full text of the part `data.part.id`;
//!   `data.delta` is a streamed piece of the part `data.part.id`, else
//!   `data.part_id`. When an event has both, the full text wins: it already
//!   contains the delta.
//!
//! # How a message is assembled
//!
//! - Turns come in log order of each message's first event.
//! - A message's parts come in order of each part's first event (a part that
//!   shows up before an earlier-numbered one comes first), joined with `"\n"`;
//!   empty parts add nothing. Deltas without a part id form one unnamed part.
//! - Deltas of a part are concatenated in seq order. A full text replaces
//!   whatever the part had, so a repeated full text (a retried append) changes
//!   nothing; deltas after it append to it.
//! - A message ends at `message.completed` or `assistant.completed` (those may
//!   carry a part too: stasis logs a user's message as one
//!   `message.completed`). Deltas for a message that has ended are ignored: a
//!   finished message cannot grow, so they are late retries. Full texts still
//!   apply, being idempotent.
//! - A message that never ended is kept and marked `unfinished`.
//! - The role is the latest one given for the message; a message whose role
//!   is never given is an `assistant`'s (roleless streams are the agent's
//!   output; stasis always names the user).
//! - Parts whose `type` is given and is not `"text"` (reasoning, tool calls)
//!   contribute no text.
//! - A message with no text is dropped.
//! - An event that repeats the one just before it (same seq, type and data,
//!   e.g. overlapping pages) is read once. Deltas are never de-duplicated
//!   otherwise: a stream may legitimately send `"a"` twice.
//! - Malformed events (data not a JSON object, fields of the wrong type, no
//!   message id) are skipped; nothing here fails or panics.
//!
//! # Budget
//!
//! See [`Budget`] and [`estimate_tokens`]: the most recent turns that fit are
//! kept, and a turn is kept or omitted whole, never cut.
//!
//! ```
//! use stasis_domain::conversation::{Budget, dispatch_prompt, rebuild};
//! use stasis_domain::event_log::Event;
//!
//! let event = |seq, event_type: &str, data: &str| Event {
//!     seq,
//!     event_type: event_type.into(),
//!     session_id: None,
//!     data: data.into(),
//!     created_at_ms: 0,
//! };
//! let events = [
//!     event(1, "message.completed", r#"{"info":{"id":"m1","role":"user"},"part":{"id":"p1","text":"Hi"}}"#),
//!     event(2, "message_part.updated", r#"{"message_id":"m2","role":"assistant","part_id":"p","delta":"Hel"}"#),
//!     event(3, "message_part.updated", r#"{"message_id":"m2","part_id":"p","delta":"lo"}"#),
//!     event(4, "assistant.completed", r#"{"message_id":"m2"}"#),
//!     event(5, "message.completed", r#"{"info":{"id":"m3","role":"user"},"part":{"id":"p3","text":"Plan?"}}"#),
//! ];
//! let conversation = rebuild(&events, &Budget::default());
//! assert_eq!(conversation.turns.len(), 3);
//! assert_eq!(conversation.turns[1].content, "Hello");
//! assert_eq!(
//!     dispatch_prompt(&conversation, None),
//!     "<prior-conversation>\nuser: Hi\n\nassistant: Hello\n</prior-conversation>\n\nPlan?"
//! );
//! ```

mod assemble;
mod budget;
mod parse;
mod prompt;
mod tokens;

/// The event types the rebuild reads; every other type is ignored.
pub const MESSAGE_EVENT_TYPES: &[&str] = &[
    "message.created",
    "message.updated",
    "message_part.updated",
    "message.part.updated",
    "message.completed",
    "assistant.completed",
];

pub use budget::{Budget, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, MAX_MAX_TOKENS, MAX_MAX_TURNS};
pub use prompt::{dispatch_prompt, escape_wrapper_tags};
pub use tokens::{CHARS_PER_TOKEN, TURN_OVERHEAD_TOKENS, estimate_tokens};

use crate::event_log::Event;
use serde::{Deserialize, Serialize};

/// The role given to a message whose events never name one.
pub const UNKNOWN_ROLE: &str = "assistant";

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Who spoke: `user`, `assistant`, or whatever role the log gave.
    pub role: String,
    /// The message's text parts, joined with `"\n"`.
    pub content: String,
    /// The message never reached `message.completed`/`assistant.completed`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unfinished: bool,
}

impl Turn {
    /// This turn's share of a budget: its content's [`estimate_tokens`] plus
    /// [`TURN_OVERHEAD_TOKENS`] for the role and separators.
    pub fn token_estimate(&self) -> u64 {
        estimate_tokens(&self.content).saturating_add(TURN_OVERHEAD_TOKENS)
    }
}

/// The conversation handed to a new container, newest turns last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorConversation {
    /// The most recent turns that fit the budget, oldest first.
    pub turns: Vec<Turn>,
    /// Older turns left out to stay within the budget.
    pub omitted_turns: u64,
    /// The sum of [`Turn::token_estimate`] over `turns`.
    pub token_estimate: u64,
    /// Something was left out (`omitted_turns > 0`). Turns are never cut.
    pub truncated: bool,
}

/// Rebuilds the conversation from `events` (in seq order, already narrowed
/// to a session if the caller wants one) and keeps what fits `budget`.
///
/// Linear in the events' total size: each event's JSON is parsed once.
pub fn rebuild(events: &[Event], budget: &Budget) -> PriorConversation {
    budget::keep_recent(assemble::assemble(events), budget)
}

/// For `skip_serializing_if`, which passes a reference.
fn is_false(value: &bool) -> bool {
    !*value
}
