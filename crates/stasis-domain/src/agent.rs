//! The calls an agent object answers, as data.
//!
//! The API crate turns HTTP requests into [`AgentCall`]s; each runtime
//! delivers them to the agent's object: the local host through the wasm
//! components, the edge worker by serialising them to the agent's Durable
//! Object, which runs [`execute`] on its own SQL.

use crate::event_log::{self, AppendBatch, AppendOutcome, AppendSettings, ReadPage, ReadQuery};
use crate::{
    DomainError,
    agent_state::{self, StateCall, StateReply},
    conversation::{Budget, PriorConversation, Recalled, StoredSummary, SummaryKey},
    fork::{self, ForkCall, ForkReply},
    history::{self, HistoryCall, HistoryReply},
    recall::{self, DispatchContext},
    restore::{self, RestoreCall, Restored},
    snapshot::{self, SnapshotCall, SnapshotReply},
    sql::SqlStore,
    summary_cache,
    workspace_store::{self, WorkspaceCall, WorkspaceReply},
};
use serde::{Deserialize, Serialize};

// Kept at its first path, where the runtimes and tests name it.
pub use crate::object_env::ObjectEnv;

/// One operation on an agent object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum AgentCall {
    /// Append a batch of events.
    AppendEvents(AppendBatch),
    /// Read a page of events.
    ReadEvents(ReadQuery),
    /// A step of a snapshot operation.
    Snapshot(SnapshotCall),
    /// Record, sessions, checkpoint, memory, export and import.
    State(StateCall),
    /// A step of a workspace operation.
    Workspace(WorkspaceCall),
    /// Versions kept and pins.
    History(HistoryCall),
    /// A fork's point and lineage.
    Fork(ForkCall),
    /// Restore in place to a point (or a pin).
    Restore(RestoreCall),
    /// The conversation rebuilt from the log.
    Conversation {
        /// Turns and tokens to keep.
        budget: Budget,
        /// Only this session's events.
        session_id: Option<String>,
    },
    /// The conversation with its omitted turns summarised (a cached
    /// summary placed, or the summariser's work handed out).
    SummarisedConversation {
        /// Turns and tokens to keep, the summary included.
        budget: Budget,
        /// Only this session's events.
        session_id: Option<String>,
    },
    /// What a dispatch of this agent carries.
    DispatchContext {
        /// Turns and tokens of the prior conversation.
        budget: Budget,
        /// Summarise the omitted turns (a summariser is configured).
        #[serde(default)]
        summarise: bool,
    },
    /// Caches a summary the summariser made.
    StoreSummary {
        /// Its scope and budget.
        key: SummaryKey,
        /// The summary and its watermark.
        summary: StoredSummary,
    },
}

/// The answer to an [`AgentCall`], same variant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum AgentReply {
    /// Seqs of the appended batch.
    Appended(AppendOutcome),
    /// A page of events.
    Events(ReadPage),
    /// The answer to a snapshot step.
    Snapshot(SnapshotReply),
    /// The answer to a state call.
    State(StateReply),
    /// The answer to a workspace step.
    Workspace(WorkspaceReply),
    /// The answer to a history call.
    History(HistoryReply),
    /// The answer to a fork call.
    Fork(ForkReply),
    /// What a restore did.
    Restored(Restored),
    /// A rebuilt conversation.
    Conversation(PriorConversation),
    /// A conversation with summaries wanted, and the summariser's work.
    Recalled(Recalled),
    /// A summary was cached.
    SummaryStored,
    /// A dispatch's context.
    DispatchContext(DispatchContext),
}

/// Creates every table an agent object needs; idempotent.
pub fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    event_log::migrate(store)?;
    snapshot::migrate(store)?;
    workspace_store::migrate(store)?;
    history::migrate(store)?;
    crate::fork::migrate(store)?;
    agent_state::migrate(store)?;
    crate::fence::migrate(store)?;
    Ok(())
}

/// [`execute`] for a write that may come from a container token: with a
/// `fence`, a guarded call ([`guards_agent_call`]) first passes
/// [`crate::fence::admit`], in the same transaction.
pub fn execute_fenced(
    store: &impl SqlStore,
    call: &AgentCall,
    env: &ObjectEnv,
    fence: Option<&crate::fence::Fence>,
) -> Result<AgentReply, DomainError> {
    if let Some(fence) = fence
        && guards_agent_call(call)
    {
        crate::fence::admit(store, fence)?;
    }
    execute(store, call, env)
}

/// Whether a fenced agent call is checked ([`crate::fence`]): every call
/// that changes the agent, except dropping a snapshot reservation of one's
/// own (a put refused at its commit cleans up after itself), listing the
/// keys in use, and caching a summary (a cache of what the log says, which
/// a read may fill).
pub fn guards_agent_call(call: &AgentCall) -> bool {
    is_write(call)
        && !matches!(
            call,
            AgentCall::Snapshot(SnapshotCall::Abandon { .. } | SnapshotCall::KeysInUse)
                | AgentCall::StoreSummary { .. }
        )
}

/// Runs one call against the agent's store. The caller wraps it in one
/// transaction and rolls back on error.
pub fn execute(
    store: &impl SqlStore,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    Ok(match call {
        AgentCall::AppendEvents(batch) => {
            let settings = AppendSettings {
                now_ms: env.now_ms,
                max_events: env.max_events,
            };
            AgentReply::Appended(event_log::append(store, batch, &settings)?)
        }
        AgentCall::ReadEvents(query) => AgentReply::Events(event_log::read(store, query)?),
        AgentCall::Snapshot(call) => AgentReply::Snapshot(snapshot::execute(store, call, env)?),
        AgentCall::State(call) => AgentReply::State(agent_state::execute(store, call, env)?),
        AgentCall::Workspace(call) => {
            AgentReply::Workspace(workspace_store::execute(store, call, env)?)
        }
        AgentCall::History(call) => AgentReply::History(history::execute(store, call, env.now_ms)?),
        AgentCall::Fork(call) => AgentReply::Fork(fork::execute(store, call, env)?),
        AgentCall::Restore(call) => AgentReply::Restored(restore::execute(store, call, env)?),
        AgentCall::Conversation { budget, session_id } => {
            AgentReply::Conversation(recall::conversation(store, budget, session_id.as_deref())?)
        }
        AgentCall::SummarisedConversation { budget, session_id } => AgentReply::Recalled(
            recall::summarised_conversation(store, budget, session_id.as_deref())?,
        ),
        AgentCall::DispatchContext { budget, summarise } => {
            AgentReply::DispatchContext(recall::dispatch_context(store, budget, *summarise)?)
        }
        AgentCall::StoreSummary { key, summary } => {
            summary_cache::write(store, key, summary, env.now_ms)?;
            AgentReply::SummaryStored
        }
    })
}

/// True when the call may change the object (and so needs a durable commit).
pub fn is_write(call: &AgentCall) -> bool {
    match call {
        AgentCall::AppendEvents(_) | AgentCall::StoreSummary { .. } | AgentCall::Restore(_) => true,
        AgentCall::ReadEvents(_)
        | AgentCall::Conversation { .. }
        | AgentCall::SummarisedConversation { .. }
        | AgentCall::DispatchContext { .. } => false,
        AgentCall::Snapshot(call) => snapshot::is_write(call),
        AgentCall::State(call) => agent_state::is_write(call),
        AgentCall::Workspace(call) => workspace_store::is_write(call),
        AgentCall::History(call) => history::is_write(call),
        AgentCall::Fork(call) => fork::is_write(call),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_agent_calls_that_change_the_object_are_guarded() {
        assert!(guards_agent_call(&AgentCall::Snapshot(
            SnapshotCall::Remove { grace_ms: 0 }
        )));
        assert!(!guards_agent_call(&AgentCall::Snapshot(
            SnapshotCall::Abandon { version: 1 }
        )));
    }
}
