//! Whether an agent that ran in another container needs a dispatch to start again, or only its
//! hydrated kilo.db: after a clean drain most agents need none.
//!
//! An agent needs one when its kilo.db does not hold its whole conversation, or when work is
//! left: no snapshot to hydrate; a conversation event (kilo's `message.*`, or a user message
//! stasis stored, e.g. a Mayor message or an inbox message) after the snapshot's watermark,
//! which kilo.db never saw; or a reply cut off that nothing took up again (an `unfinished`
//! turn). Events of other kinds after the watermark (session status, the sidecar's and the
//! supervisor's own notes) change nothing kilo needs. When stasis cannot tell, the agent gets a
//! dispatch: one too many costs a little, one missing loses work.

use serde::Deserialize;

use crate::error::Result;
use crate::http::Client;
use crate::ids::AgentRef;

/// The event types the conversation is rebuilt from (`stasis_domain::conversation::
/// MESSAGE_EVENT_TYPES`; a user message stasis stores is a `message.completed`), less stasis's
/// records of what it sent into kilo: kilo's own events of those messages follow them.
pub const CONVERSATION_EVENT_TYPES: &[&str] = &[
    "message.updated",
    "message.part.updated",
    "message.part.delta",
    "message.removed",
    "message.part.removed",
    "message.created",
    "message_part.updated",
    "message.completed",
    "assistant.completed",
];

/// Events read after the watermark; more than this many is reason enough for a dispatch.
const EVENTS_AFTER: u32 = 1_000;

/// Why an agent needs a dispatch (`None`: its kilo.db is enough).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// No snapshot was hydrated.
    NoSnapshot,
    /// A conversation event at this seq is newer than the snapshot's watermark.
    NewerThanSnapshot(u64),
    /// A reply was cut off and not taken up again.
    UnfinishedTurn,
    /// stasis could not tell (the reason).
    Unknown(String),
}

#[derive(Deserialize)]
struct Page {
    events: Vec<Seen>,
    has_more: bool,
}

#[derive(Deserialize)]
struct Seen {
    seq: u64,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct Conversation {
    turns: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    unfinished: bool,
}

/// Whether `agent`, hydrated from a snapshot with `watermark` (`None`: no snapshot), needs a
/// dispatch.
pub fn dispatch_need(client: &Client, agent: &AgentRef, watermark: Option<u64>) -> Option<Need> {
    let Some(watermark) = watermark else {
        return Some(Need::NoSnapshot);
    };
    match check(client, agent, watermark) {
        Ok(need) => need,
        Err(e) => Some(Need::Unknown(e.to_string())),
    }
}

fn check(client: &Client, agent: &AgentRef, watermark: u64) -> Result<Option<Need>> {
    let path = agent.path(&format!("/events?after={watermark}&limit={EVENTS_AFTER}"));
    let page: Page = client.get_json(&path, None)?;
    let newer = page
        .events
        .iter()
        .find(|e| CONVERSATION_EVENT_TYPES.contains(&e.kind.as_str()));
    if let Some(event) = newer {
        return Ok(Some(Need::NewerThanSnapshot(event.seq)));
    }
    if page.has_more {
        return Ok(Some(Need::Unknown(format!(
            "more than {EVENTS_AFTER} events after the snapshot's watermark {watermark}"
        ))));
    }
    let conversation: Conversation = client.get_json(&agent.path("/conversation"), None)?;
    if conversation.turns.iter().any(|t| t.unfinished) {
        return Ok(Some(Need::UnfinishedTurn));
    }
    Ok(None)
}
