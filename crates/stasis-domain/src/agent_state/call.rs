//! The agent-state calls as data, and the one function that runs them.

use super::{
    AgentRecord, AgentSummary, Checkpoint, CheckpointStored, DestroyOutcome, ExportHead,
    ExportPage, ManifestMemory, ManifestSession, MemoryEntry, SessionDeleted, SessionRecord,
    checkpoint, export, memory, record, sessions,
    staging::{self, ImportCall, ImportReply},
};
use crate::{DomainError, object_env::ObjectEnv, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// One operation on an agent's state beside its event log. Documents
/// (`metadata`, `document`, `value`) are JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum StateCall {
    /// Register the agent or update it; `metadata: None` keeps the stored
    /// metadata. Answers [`StateReply::Agent`].
    PutAgent {
        /// 1 to 128 bytes.
        role: String,
        /// JSON text, at most 1 MiB.
        metadata: Option<String>,
    },
    /// Read the registered agent. Answers [`StateReply::AgentSummary`].
    GetAgent,
    /// Remove everything but the snapshot. Answers [`StateReply::Destroyed`].
    DestroyAgent,
    /// Create or update a session; `None` keeps a field. Answers
    /// [`StateReply::Session`].
    PutSession {
        /// The session's id.
        session_id: String,
        /// `running`, `completed`, `failed` or `closed`.
        status: Option<String>,
        /// JSON text, at most 1 MiB.
        metadata: Option<String>,
    },
    /// Read a session. Answers [`StateReply::Session`].
    GetSession {
        /// The session's id.
        session_id: String,
    },
    /// Remove a session and its events. Answers
    /// [`StateReply::SessionDeleted`].
    DeleteSession {
        /// The session's id.
        session_id: String,
    },
    /// Every session with its metadata, oldest first. Answers
    /// [`StateReply::Sessions`].
    ListSessions,
    /// Store the checkpoint. Answers [`StateReply::CheckpointStored`].
    PutCheckpoint {
        /// JSON text, at most 1 MiB.
        document: String,
    },
    /// Read the checkpoint. Answers [`StateReply::Checkpoint`].
    GetCheckpoint,
    /// Read a version of the checkpoint (current or kept). Answers
    /// [`StateReply::Checkpoint`].
    GetCheckpointVersion {
        /// Its number.
        version: u64,
    },
    /// Remove the checkpoint. Answers [`StateReply::Deleted`].
    DeleteCheckpoint,
    /// Write a memory entry. Answers [`StateReply::Memory`].
    PutMemory {
        /// An id.
        key: String,
        /// JSON text, at most 1 MiB.
        value: String,
    },
    /// Read a memory entry. Answers [`StateReply::Memory`].
    GetMemory {
        /// An id.
        key: String,
    },
    /// Read a version of a memory entry (current or kept). Answers
    /// [`StateReply::Memory`].
    GetMemoryVersion {
        /// An id.
        key: String,
        /// Its number.
        version: u64,
    },
    /// Remove a memory entry. Answers [`StateReply::Deleted`].
    DeleteMemory {
        /// An id.
        key: String,
    },
    /// List memory entries by key. Answers [`StateReply::MemoryList`].
    ListMemory {
        /// Keys that start with this.
        prefix: Option<String>,
        /// Values whose JSON text contains this, ignoring ASCII case.
        query: Option<String>,
        /// 1 to 1,000; 100 when omitted.
        limit: Option<u32>,
    },
    /// What an export writes first: record, checkpoint, the newest seq.
    /// Answers [`StateReply::ExportHead`].
    ExportHead,
    /// A page of sessions by id, after `after`. Answers
    /// [`StateReply::SessionPage`].
    ExportSessions {
        /// The last id of the previous page.
        after: Option<String>,
    },
    /// A page of memory by key, after `after`. Answers
    /// [`StateReply::MemoryPage`].
    ExportMemory {
        /// The last key of the previous page.
        after: Option<String>,
    },
    /// A step of an import. Answers [`StateReply::Import`].
    Import(ImportCall),
}

/// The answer to a [`StateCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum StateReply {
    /// The record after `PutAgent` (with `created` for 201).
    Agent(AgentRecord),
    /// The agent for `GetAgent` (the caller adds snapshot metadata).
    AgentSummary(AgentSummary),
    /// What `DestroyAgent` found.
    Destroyed(DestroyOutcome),
    /// The session after `PutSession`, or for `GetSession`.
    Session(SessionRecord),
    /// What `DeleteSession` removed.
    SessionDeleted(SessionDeleted),
    /// Every session, oldest first.
    Sessions(Vec<SessionRecord>),
    /// The stored checkpoint's size and time.
    CheckpointStored(CheckpointStored),
    /// The checkpoint for `GetCheckpoint`.
    Checkpoint(Checkpoint),
    /// `DeleteCheckpoint` or `DeleteMemory` removed what it named.
    Deleted,
    /// The entry after `PutMemory`, or for `GetMemory`.
    Memory(MemoryEntry),
    /// The entries `ListMemory` selected, sorted by key.
    MemoryList(Vec<MemoryEntry>),
    /// What an export writes first.
    ExportHead(ExportHead),
    /// A page of sessions.
    SessionPage(ExportPage<ManifestSession>),
    /// A page of memory.
    MemoryPage(ExportPage<ManifestMemory>),
    /// The answer to an import step.
    Import(ImportReply),
}

/// Runs one call against the agent's store. The caller wraps it in one
/// transaction and rolls back on error.
pub fn execute(
    store: &impl SqlStore,
    call: &StateCall,
    env: &ObjectEnv,
) -> Result<StateReply, DomainError> {
    let now = env.now_ms;
    Ok(match call {
        StateCall::PutAgent { role, metadata } => {
            StateReply::Agent(record::put(store, role, metadata.as_deref(), now)?)
        }
        StateCall::GetAgent => StateReply::AgentSummary(record::summary(store)?),
        StateCall::DestroyAgent => StateReply::Destroyed(record::destroy(store)?),
        StateCall::PutSession {
            session_id,
            status,
            metadata,
        } => StateReply::Session(sessions::put(
            store,
            session_id,
            status.as_deref(),
            metadata.as_deref(),
            now,
        )?),
        StateCall::GetSession { session_id } => {
            StateReply::Session(sessions::get(store, session_id)?)
        }
        StateCall::DeleteSession { session_id } => {
            StateReply::SessionDeleted(sessions::delete(store, session_id)?)
        }
        StateCall::ListSessions => StateReply::Sessions(sessions::list(store)?),
        StateCall::PutCheckpoint { document } => {
            StateReply::CheckpointStored(checkpoint::put(store, document, env)?)
        }
        StateCall::GetCheckpoint => StateReply::Checkpoint(checkpoint::get(store)?),
        StateCall::GetCheckpointVersion { version } => {
            StateReply::Checkpoint(checkpoint::get_version(store, *version)?)
        }
        StateCall::DeleteCheckpoint => {
            checkpoint::delete(store, env)?;
            StateReply::Deleted
        }
        StateCall::PutMemory { key, value } => {
            StateReply::Memory(memory::put(store, key, value, env)?)
        }
        StateCall::GetMemory { key } => StateReply::Memory(memory::get(store, key)?),
        StateCall::GetMemoryVersion { key, version } => {
            StateReply::Memory(memory::get_version(store, key, *version)?)
        }
        StateCall::DeleteMemory { key } => {
            memory::delete(store, key, env)?;
            StateReply::Deleted
        }
        StateCall::ListMemory {
            prefix,
            query,
            limit,
        } => StateReply::MemoryList(memory::list(
            store,
            prefix.as_deref(),
            query.as_deref(),
            *limit,
        )?),
        StateCall::ExportHead => StateReply::ExportHead(export::head(store)?),
        StateCall::ExportSessions { after } => {
            StateReply::SessionPage(export::sessions_page(store, after.as_deref())?)
        }
        StateCall::ExportMemory { after } => {
            StateReply::MemoryPage(export::memory_page(store, after.as_deref())?)
        }
        StateCall::Import(call) => StateReply::Import(staging::execute(store, call, env)?),
    })
}

/// True when the call may change the object (and so needs a durable commit).
pub fn is_write(call: &StateCall) -> bool {
    !matches!(
        call,
        StateCall::GetAgent
            | StateCall::GetSession { .. }
            | StateCall::ListSessions
            | StateCall::GetCheckpoint
            | StateCall::GetCheckpointVersion { .. }
            | StateCall::GetMemory { .. }
            | StateCall::GetMemoryVersion { .. }
            | StateCall::ListMemory { .. }
            | StateCall::ExportHead
            | StateCall::ExportSessions { .. }
            | StateCall::ExportMemory { .. }
    )
}
