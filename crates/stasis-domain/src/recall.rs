//! What an agent object hands out for a dispatch or a conversation read:
//! computed inside the object, so that a rebuild reads its events where
//! they are instead of shipping thousands of them across a boundary.

use crate::{
    DomainError, agent_state, conversation,
    conversation::{Budget, PriorConversation, Recalled, SummaryKey, SummaryWork},
    event_log,
    snapshot::{self, SnapshotMeta},
    sql::SqlStore,
    summary_cache,
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
    /// The conversation rebuilt from the log (with a cached summary
    /// placed, or cut when `summary_work` is set).
    pub conversation: PriorConversation,
    /// What the summariser must do first, when summaries were wanted and
    /// the cached one is not current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_work: Option<SummaryWork>,
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
    let events = conversation_events(store, session_id)?;
    Ok(conversation::rebuild(&events, budget))
}

/// The conversation with its omitted turns summarised: the cached summary
/// placed when it is current, else the cut conversation and the work that
/// would extend it (see [`conversation::plan`]).
pub fn summarised_conversation(
    store: &impl SqlStore,
    budget: &Budget,
    session_id: Option<&str>,
) -> Result<Recalled, DomainError> {
    let events = conversation_events(store, session_id)?;
    let key = SummaryKey {
        session_id: session_id.map(str::to_owned),
        budget: budget.clone(),
    };
    let cached = summary_cache::read(store, &key)?;
    Ok(conversation::plan(
        conversation::turns_with_seqs(&events),
        budget,
        key,
        cached,
    ))
}

/// The message events of one session or all, with every restore of the
/// log among them (a restore has no session), in seq order.
fn conversation_events(
    store: &impl SqlStore,
    session_id: Option<&str>,
) -> Result<Vec<event_log::Event>, DomainError> {
    let mut events = event_log::of_types(store, conversation::MESSAGE_EVENT_TYPES, session_id)?;
    let restores = event_log::of_types(store, &[conversation::RESTORED_EVENT], None)?;
    if restores.is_empty() {
        return Ok(events);
    }
    events.extend(restores);
    events.sort_by_key(|event| event.seq);
    Ok(events)
}

/// The checkpoint, conversation, snapshot and watermark, read at once;
/// with `summarise`, the conversation as [`summarised_conversation`].
pub fn dispatch_context(
    store: &impl SqlStore,
    budget: &Budget,
    summarise: bool,
) -> Result<DispatchContext, DomainError> {
    let recalled = if summarise {
        summarised_conversation(store, budget, None)?
    } else {
        Recalled {
            conversation: conversation(store, budget, None)?,
            work: None,
        }
    };
    Ok(DispatchContext {
        checkpoint: agent_state::read::checkpoint(store)?.map(|c| c.document),
        conversation: recalled.conversation,
        summary_work: recalled.work,
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
