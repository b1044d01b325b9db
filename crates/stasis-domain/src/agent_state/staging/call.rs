//! The staging calls and their replies, as data.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use crate::{
    agent_state::{
        ImportSummary,
        manifest::{ManifestAgent, ManifestEvent, ManifestMemory, ManifestSession},
    },
    snapshot::StagedSnapshot,
};
use serde::{Deserialize, Serialize};

/// One step of an import. Every step after `Begin`/`Resume` names the
/// ticket they handed out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ImportCall {
    /// Starts an import, dropping anything staged before. `import_id` names
    /// a multi-part import (its part 1). Answers [`ImportReply::Ticket`].
    Begin {
        /// The client's name for a multi-part import.
        import_id: Option<String>,
    },
    /// Continues multi-part import `import_id` with part `part`, which must
    /// be the next. Answers [`ImportReply::Ticket`].
    Resume {
        /// The import's id.
        import_id: String,
        /// Counted from 1.
        part: u64,
    },
    /// Checks and stages a batch. Answers [`ImportReply::Staged`].
    Stage {
        /// From `Begin` or `Resume`.
        ticket: u64,
        /// The batch.
        batch: ImportBatch,
    },
    /// A part of a multi-part import arrived whole. Answers
    /// [`ImportReply::Staged`].
    EndPart {
        /// From `Resume` or `Begin`.
        ticket: u64,
    },
    /// Applies the rules that need the whole manifest, changing nothing.
    /// Answers [`ImportReply::Checked`].
    Check {
        /// From `Begin` or `Resume`.
        ticket: u64,
    },
    /// Checks again and replaces the agent's state with what is staged.
    /// Answers [`ImportReply::Committed`].
    Commit {
        /// From `Begin` or `Resume`.
        ticket: u64,
    },
    /// Drops what is staged, if `ticket` is still the import in progress.
    /// Answers [`ImportReply::Aborted`].
    Abort {
        /// From `Begin` or `Resume`.
        ticket: u64,
    },
}

/// Part of a manifest, in the order it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "part", content = "items", rename_all = "snake_case")]
pub enum ImportBatch {
    /// `agent` (null: not registered). At most once per import.
    Agent(Option<ManifestAgent>),
    /// `checkpoint`, JSON text (null: none). At most once per import.
    Checkpoint(#[serde(with = "crate::agent_state::raw_json::option")] Option<String>),
    /// The next events of `events`.
    Events(Vec<ManifestEvent>),
    /// The next sessions of `sessions`.
    Sessions(Vec<ManifestSession>),
    /// The next entries of `memory`.
    Memory(Vec<ManifestMemory>),
    /// `snapshot`, its bytes already stored (null: none). At most once.
    Snapshot(Option<StagedSnapshot>),
}

/// What is staged so far.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportProgress {
    /// Parts of a multi-part import received whole.
    pub parts: u64,
    /// Events staged.
    pub events: u64,
    /// Sessions staged.
    pub sessions: u64,
    /// Memory entries staged.
    pub memory: u64,
}

/// What the commit will do, for the steps the caller takes before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportChecked {
    /// The role the agent will have; `None` when it will not be registered.
    pub role: Option<String>,
}

/// The answer to an [`ImportCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ImportReply {
    /// The import's ticket.
    Ticket(u64),
    /// What is staged after the call.
    Staged(ImportProgress),
    /// The whole manifest passed.
    Checked(ImportChecked),
    /// The agent was replaced.
    Committed(ImportSummary),
    /// Nothing is staged any more (or the ticket was stale).
    Aborted,
}
