//! What an agent object hands out for a dispatch or a conversation read:
//! computed inside the object, so that a rebuild reads its events where
//! they are instead of shipping thousands of them across a boundary.

use crate::{
    DomainError, agent_state, conversation,
    conversation::{Budget, PriorConversation},
    event_log,
    snapshot::{self, SnapshotMeta},
    sql::SqlStore,
};
use serde::{Deserialize, Serialize};

/// The user message stasis writes into the Mayor's log: one event of this
/// type closes it at once.
pub const USER_MESSAGE_EVENT: &str = "message.completed";

/// Everything a dispatch carries from the agent's object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchContext {
    /// The stored checkpoint, as JSON text.
    pub checkpoint: Option<String>,
    /// The conversation rebuilt from the log.
    pub conversation: PriorConversation,
    /// The current snapshot's metadata.
    pub snapshot: Option<SnapshotMeta>,
    /// The newest seq of the log.
    pub event_watermark: u64,
}

/// The conversation rebuilt from the retained events, of one session or all.
pub fn conversation(
    store: &impl SqlStore,
    budget: &Budget,
    session_id: Option<&str>,
) -> Result<PriorConversation, DomainError> {
    let events = event_log::of_types(store, conversation::MESSAGE_EVENT_TYPES, session_id)?;
    Ok(conversation::rebuild(&events, budget))
}

/// The checkpoint, conversation, snapshot and watermark, read at once.
pub fn dispatch_context(
    store: &impl SqlStore,
    budget: &Budget,
) -> Result<DispatchContext, DomainError> {
    Ok(DispatchContext {
        checkpoint: agent_state::read::checkpoint(store)?.map(|c| c.document),
        conversation: conversation(store, budget, None)?,
        snapshot: snapshot::current_meta(store)?,
        event_watermark: event_log::state(store)?.last_seq,
    })
}

/// The event data of a user message, in the shape the rebuild reads.
pub fn user_message_data(message_id: &str, text: &str) -> String {
    #[derive(Serialize)]
    struct Info<'a> {
        id: &'a str,
        role: &'a str,
    }
    #[derive(Serialize)]
    struct Part<'a> {
        id: String,
        text: &'a str,
    }
    #[derive(Serialize)]
    struct Data<'a> {
        info: Info<'a>,
        part: Part<'a>,
    }
    let data = Data {
        info: Info {
            id: message_id,
            role: "user",
        },
        part: Part {
            id: format!("{message_id}-text"),
            text,
        },
    };
    // Strings and a fixed shape always serialise; the fallback is never used.
    serde_json::to_string(&data).unwrap_or_else(|_| "null".to_owned())
}
