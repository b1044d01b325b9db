//! The calls an agent object answers about forks, as data.

use super::lineage::{self, Lineage};
use crate::{
    DomainError,
    agent_state::{self, ImportCall, ImportReply, ImportSummary, StateCall, StateReply},
    history::{
        Kind, PointBody, StateAt, VersionAt, point,
        versions::{self, Current},
    },
    object_env::ObjectEnv,
    snapshot,
    sql::SqlStore,
    workspace_store,
};
use serde::{Deserialize, Serialize};

/// One fork call on an agent object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ForkCall {
    /// The versions of the agent at a point (the source of a fork);
    /// changes nothing.
    Resolve {
        /// The point.
        point: PointBody,
    },
    /// The agent's lineage, if it is a fork; changes nothing.
    Lineage,
    /// Forgets the lineage (the fork's holds are released); answers it.
    ClearLineage,
    /// Commits the fork's import `ticket` and, in the same step, records
    /// its lineage and its current versions as history (an import leaves
    /// none), each with the seq it had in the source at the point, so that
    /// a fork of the fork resolves its points.
    Commit {
        /// The import's ticket.
        ticket: u64,
        /// The fork's lineage.
        lineage: Lineage,
        /// The source's state at the point.
        state: StateAt,
    },
}

/// The answer to a [`ForkCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ForkReply {
    /// The state at the point.
    Resolved(StateAt),
    /// The lineage, if any.
    Lineage(Option<Lineage>),
    /// The fork's import is committed.
    Committed(ImportSummary),
}

/// Runs one fork call inside the caller's transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &ForkCall,
    env: &ObjectEnv,
) -> Result<ForkReply, DomainError> {
    Ok(match call {
        ForkCall::Resolve { point } => {
            let point = point::Point::try_from(point.clone())?;
            ForkReply::Resolved(point::resolve(store, &point)?)
        }
        ForkCall::Lineage => ForkReply::Lineage(lineage::get(store)?),
        ForkCall::ClearLineage => ForkReply::Lineage(lineage::clear(store)?),
        ForkCall::Commit {
            ticket,
            lineage,
            state,
        } => {
            let commit = StateCall::Import(ImportCall::Commit { ticket: *ticket });
            let StateReply::Import(ImportReply::Committed(summary)) =
                agent_state::execute(store, &commit, env)?
            else {
                return Err(DomainError::Storage(
                    "an import's commit answered something else".into(),
                ));
            };
            lineage::set(store, lineage)?;
            seed_history(store, state)?;
            ForkReply::Committed(summary)
        }
    })
}

/// Whether the call may change the object.
pub fn is_write(call: &ForkCall) -> bool {
    matches!(call, ForkCall::ClearLineage | ForkCall::Commit { .. })
}

/// Records the fork's current kilo.db, workspace, checkpoint and memory
/// as its current versions, with the seqs they had at the point.
fn seed_history(store: &impl SqlStore, state: &StateAt) -> Result<(), DomainError> {
    let current = |version, at: &VersionAt| Current {
        version,
        seq: at.seq,
        created_at: at.created_at,
        deleted: false,
    };
    if let (Some(meta), Some(at)) = (snapshot::current_meta(store)?, &state.db_snapshot) {
        versions::set_current(store, Kind::DbSnapshot, "", &current(meta.version, at))?;
    }
    if let (Some(tree), Some(at)) = (workspace_store::current(store)?, &state.workspace) {
        versions::set_current(store, Kind::Workspace, "", &current(tree.version, at))?;
    }
    if let Some(at) = &state.checkpoint {
        let version = versions::next_version(store, Kind::Checkpoint)?;
        versions::set_current(store, Kind::Checkpoint, "", &current(version, at))?;
    }
    for (key, at) in &state.memory {
        let version = versions::next_version(store, Kind::Memory)?;
        versions::set_current(store, Kind::Memory, key, &current(version, at))?;
    }
    Ok(())
}
