//! The calls an agent object answers about forks, as data.

use super::lineage::{self, Lineage};
use crate::{
    DomainError,
    history::{PointBody, StateAt, point},
    object_env::ObjectEnv,
    sql::SqlStore,
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
    /// Records the agent's lineage (a fork about to commit).
    SetLineage {
        /// The lineage.
        lineage: Lineage,
    },
    /// Forgets the lineage (the fork's holds are released); answers it.
    ClearLineage,
}

/// The answer to a [`ForkCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ForkReply {
    /// The state at the point.
    Resolved(StateAt),
    /// The lineage, if any.
    Lineage(Option<Lineage>),
    /// Done.
    Done,
}

/// Runs one fork call inside the caller's transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &ForkCall,
    _env: &ObjectEnv,
) -> Result<ForkReply, DomainError> {
    Ok(match call {
        ForkCall::Resolve { point } => {
            let point = point::Point::try_from(point.clone())?;
            ForkReply::Resolved(point::resolve(store, &point)?)
        }
        ForkCall::Lineage => ForkReply::Lineage(lineage::get(store)?),
        ForkCall::SetLineage { lineage } => {
            lineage::set(store, lineage)?;
            ForkReply::Done
        }
        ForkCall::ClearLineage => ForkReply::Lineage(lineage::clear(store)?),
    })
}

/// Whether the call may change the object.
pub fn is_write(call: &ForkCall) -> bool {
    matches!(call, ForkCall::SetLineage { .. } | ForkCall::ClearLineage)
}
