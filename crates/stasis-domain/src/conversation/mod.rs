//! An agent's conversation, rebuilt from its event log.
//!
//! A new container gets the Mayor (or any agent) back with the conversation
//! it had; this module turns the logged message events into turns. It is a
//! pure function of the events, so both runtimes and every test get the same
//! answer.
//!
//! # Which events count
//!
//! Those an agent runtime really emits. kilo (`kilo serve`, Kilo CLI 7.x)
//! and opencode ≥ 1.2 send `{id, type, properties}` on `GET /event`; a
//! container stores each as `{type, session_id: properties.sessionID, data:
//! properties}`. Of those, [`MESSAGE_EVENT_TYPES`] are read, every other type
//! is ignored (the `sync` twin kilo sends of every persisted change among
//! them):
//!
//! - `message.updated` `{info: {id, role, time: {created, completed?},
//!   finish?, error?}}`: the message's id and role. An assistant message is
//!   finished once `info.time.completed`, `info.finish` or `info.error` is
//!   set (to anything but `null`); a user message is finished as soon as it
//!   appears here. kilo sends it several times per message (the user's again
//!   later with a `summary`): each says the same or more.
//! - `message.part.updated` `{part: {id, messageID, type, ...}}`: a part's
//!   state so far, the latest replacing the one before.
//!   - `type: "text"` (or no type): `text` is the part's whole text so far;
//!     it starts as `""` with `time.start` and is final once `time.end` is
//!     set. A text without `time` (a user's) is final. Text parts with
//!     `synthetic` or `ignored` set to `true` are not what was said: left
//!     out.
//!   - `type: "tool"`: one line in the turn, see below.
//!   - any other type (`reasoning`, `step-start`, `step-finish`, `snapshot`,
//!     `patch`, `file`, ...): not conversation, left out, and so are its
//!     deltas.
//! - `message.part.delta` `{messageID, partID, field, delta}`: a streamed
//!   piece of the part's `field`; only `field: "text"` (or none) counts.
//!   While a reply streams, deltas are the only copy of its text.
//! - `message.removed` `{messageID}` and `message.part.removed` `{messageID,
//!   partID}`: the message or part is gone (a revert), for good: later
//!   events for it are ignored.
//! - The older spellings mean the same: opencode < 1.2's
//!   `message.part.updated` with a `delta` beside the part; the design
//!   text's `message.created`, `message_part.updated`, `message.completed`
//!   and `assistant.completed` (the last two finish the message), with ids
//!   in `data.message_id` / `data.part_id` and the role in `data.role`. Any
//!   of these types may carry a message's `info`, a `part` and a `delta`.
//!
//! Where things are read from: the message id is `info.id`, else
//! `message_id`, else `messageID`, else `part.messageID` (or
//! `part.message_id`); the part id is `part.id`, else `part_id`, else
//! `partID`; the role is `info.role`, else `role`. An event without a
//! message id is skipped, and so is one that gives both spellings of the
//! same field (`message_id` and `messageID`, `part_id` and `partID`).
//!
//! # How a message is assembled
//!
//! - Turns come in log order of each message's first event.
//! - A message's parts come in order of each part's first event, joined with
//!   `"\n"`; empty parts add nothing. Deltas without a part id form one
//!   unnamed part.
//! - Text: deltas are appended in seq order, and may come before the part's
//!   first update. A full text replaces whatever the part had (so a repeated
//!   one, a `sync` twin stored anyway, or a retried append changes nothing),
//!   and deltas after it extend it. One exception keeps a stream whose
//!   deltas overtook the part's first update: a full text that is not final
//!   and is a shorter prefix of what was streamed changes nothing.
//! - Deltas for a finished message are ignored: it cannot grow, so they are
//!   late retries. Full texts still apply, being idempotent.
//! - A tool part is one line, replaced by each update:
//!   `[tool bash: Print hi — completed]`, i.e. `[tool NAME: SUMMARY —
//!   STATUS]`, or `[tool NAME — STATUS]` without a summary. NAME is
//!   `part.tool` (a tool part without one is left out); SUMMARY is
//!   `state.title`, else the input's `description`, else its `command`,
//!   else its first non-empty string field; STATUS is `state.status`
//!   (`pending`, `running`, `completed`, `error`; anything else `unknown`).
//!   Whitespace runs become one space; NAME keeps at most
//!   [`TOOL_NAME_MAX_CHARS`] characters and SUMMARY
//!   [`TOOL_SUMMARY_MAX_CHARS`], a cut one ending in `…`: a line has at
//!   most 141 characters.
//! - `unfinished` marks what really was cut off: a message that never
//!   finished, or one with a text part whose deltas (kilo's
//!   `message.part.delta`, or opencode < 1.2's `delta` beside a text with
//!   `time.start`) never got their final full text (`time.end` set). An
//!   assistant's message cut off that way is no longer `unfinished` once a
//!   later assistant message of the same session (the event's `session_id`)
//!   finished whole: the runtime took the work up again (a supervisor asked
//!   it to continue the cut reply), so later dispatches stop asking for it.
//!   Its text stays what was streamed before the cut.
//! - The role is the latest one given for the message; a message whose role
//!   is never given is an `assistant`'s (roleless streams are the agent's
//!   output; stasis always names the user).
//! - A message with no text and no tool line is dropped, as is a removed
//!   one.
//! - An event that repeats the one just before it (same seq, type and data,
//!   e.g. overlapping pages) is read once. Deltas are never de-duplicated
//!   otherwise: a stream may legitimately send `"a"` twice.
//! - Malformed events (data not a JSON object, fields read here of the wrong
//!   type, no message id) are skipped; nothing here fails or panics.
//!
//! # Budget
//!
//! See [`Budget`] and [`estimate_tokens`]: the most recent turns that fit are
//! kept, and a turn is kept or omitted whole, never cut. With a summariser,
//! the omitted turns become one summary turn placed first (see [`plan`] and
//! [`summary_prompt`]).
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
//! // kilo's events for a user message and a streamed reply, then a user
//! // message stasis logged itself (in the design text's spelling).
//! let events = [
//!     event(1, "message.updated", r#"{"info":{"id":"m1","role":"user"}}"#),
//!     event(2, "message.part.updated", r#"{"part":{"id":"p1","messageID":"m1","type":"text","text":"Hi"}}"#),
//!     event(3, "message.updated", r#"{"info":{"id":"m2","role":"assistant","time":{"created":1}}}"#),
//!     event(4, "message.part.updated", r#"{"part":{"id":"p2","messageID":"m2","type":"text","text":"","time":{"start":1}}}"#),
//!     event(5, "message.part.delta", r#"{"messageID":"m2","partID":"p2","field":"text","delta":"Hel"}"#),
//!     event(6, "message.part.delta", r#"{"messageID":"m2","partID":"p2","field":"text","delta":"lo"}"#),
//!     event(7, "message.part.updated", r#"{"part":{"id":"p2","messageID":"m2","type":"text","text":"Hello","time":{"start":1,"end":2}}}"#),
//!     event(8, "message.updated", r#"{"info":{"id":"m2","role":"assistant","time":{"created":1,"completed":2}}}"#),
//!     event(9, "message.completed", r#"{"info":{"id":"m3","role":"user"},"part":{"id":"p3","text":"Plan?"}}"#),
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
mod message;
mod parse;
mod prompt;
mod raw;
mod restores;
mod summary;
mod summary_prompt;
mod text;
mod tokens;
mod tool;
mod tool_input;
mod turn;

/// The event types the rebuild reads; every other type is ignored.
pub const MESSAGE_EVENT_TYPES: &[&str] = &[
    "message.updated",
    "message.part.updated",
    "message.part.delta",
    "message.removed",
    "message.part.removed",
    "message.created",
    "message_part.updated",
    "message.completed",
    "assistant.completed",
    // stasis's own records of what it sent into the runtime (see `assemble::sent_by_stasis`).
    "stasis.inbox.delivered",
    "stasis.resume.session_prompt",
    "stasis.resume.cut_reply",
];

pub use budget::{Budget, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, MAX_MAX_TOKENS, MAX_MAX_TURNS};
pub use prompt::{dispatch_prompt, escape_wrapper_tags};
pub use restores::{RESTORED_EVENT, after_restores};
pub use summary::{
    Recalled, SUMMARY_MAX_TOKENS, SUMMARY_MIN_TOKENS, SUMMARY_ROLE, SeqTurn, StoredSummary,
    SummaryKey, SummaryNote, SummaryStatus, SummaryWork, allowance, fit_summary, place_summary,
    plan,
};
pub use summary_prompt::{
    PROMPT_CHUNK_MAX_CHARS, PROMPT_TURN_MAX_CHARS, SummaryPrompt, chunks, summary_prompt,
};
pub use tokens::{CHARS_PER_TOKEN, TURN_OVERHEAD_TOKENS, estimate_tokens};
pub use tool::{TOOL_NAME_MAX_CHARS, TOOL_SUMMARY_MAX_CHARS};
pub use turn::{PriorConversation, Turn};

use crate::event_log::Event;

/// The role given to a message whose events never name one.
pub const UNKNOWN_ROLE: &str = "assistant";

/// Rebuilds the conversation from `events` (in seq order, already narrowed
/// to a session if the caller wants one, with the `stasis.restored` events
/// of the whole log among them: see [`after_restores`]) and keeps what fits
/// `budget`.
///
/// Linear in the events' total size: each event's JSON is parsed once.
pub fn rebuild(events: &[Event], budget: &Budget) -> PriorConversation {
    budget::keep_recent(assemble::assemble(&after_restores(events)), budget)
}

/// Every turn of `events` (as [`rebuild`] assembles them, before any
/// budget), each with the seq of its message's first event: what
/// [`plan`] needs to tell covered turns from new ones.
pub fn turns_with_seqs(events: &[Event]) -> Vec<SeqTurn> {
    assemble::assemble_with_seqs(&after_restores(events))
}
