//! Fencing: once another container has taken a town over, nothing the
//! superseded one writes with a container token lands.
//!
//! A container token names one container. Its writes are checked twice,
//! each time inside the object's own transaction:
//!
//! - **the town**: a guarded town write ([`crate::town::guards_town_call`])
//!   needs its container to be the town's current one
//!   ([`crate::town::containers::require_current`]), in the same transaction
//!   as the write itself;
//! - **each agent**: a guarded agent write
//!   ([`crate::agent::guards_agent_call`]) carries a [`Fence`], the epoch
//!   the town gave its container when it became current (the API reads it
//!   from the town just before). The agent keeps the newest epoch any write
//!   brought and refuses older ones ([`admit`]), so once the successor has
//!   written to an agent, no write of the superseded container lands there,
//!   even one that passed the town's check just before the takeover.
//!
//! What remains: a write that passed the town's check before the takeover
//! may still land on an agent the successor has not written to yet. It then
//! comes before every write of the successor there, so it never overwrites
//! one; a successor that only read the agent (hydrated its snapshot) may not
//! have seen it.

use crate::{
    DomainError,
    error::FenceRefusal,
    params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The container a write comes from, and the epoch the town gave it when it
/// became current (epochs count up from 1 per town, one per takeover).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fence {
    /// The container the token names.
    pub container_id: String,
    /// Its epoch.
    pub epoch: u64,
}

/// The code of a write from a container another one has superseded.
pub const FENCED: &str = "container_fenced";
/// The code of a write from a container that has not heartbeat yet.
pub const NOT_CURRENT: &str = "container_not_current";

/// The agent's one row: the newest epoch a container write brought.
const STATEMENTS: &[&str] = &["CREATE TABLE IF NOT EXISTS agent_fence (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        epoch INTEGER NOT NULL,
        container_id TEXT NOT NULL
    )"];

/// Creates the agent's fence table if missing. Destroying or importing the
/// agent leaves it alone: a zombie stays fenced from a recreated agent too.
pub fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}

/// Lets a write with `fence` through on an agent, or refuses it (409
/// `container_fenced`) when a newer container has written here already. A
/// newer epoch is remembered, within the caller's transaction.
pub fn admit(store: &impl SqlStore, fence: &Fence) -> Result<(), DomainError> {
    let newest = store.first_row(
        "SELECT epoch, container_id FROM agent_fence WHERE id = 1",
        Vec::new(),
    )?;
    if let Some(row) = newest {
        let (epoch, holder) = (row.uint(0)?, row.text(1)?);
        if fence.epoch < epoch {
            return Err(superseded(&fence.container_id, Some(holder)));
        }
        if fence.epoch == epoch {
            return Ok(());
        }
    }
    store.run(
        "INSERT INTO agent_fence (id, epoch, container_id) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET epoch = excluded.epoch, container_id = excluded.container_id",
        params![fence.epoch, fence.container_id.as_str()],
    )?;
    Ok(())
}

/// 409 `container_fenced`: `container_id` was superseded by `current`.
pub fn superseded(container_id: &str, current: Option<&str>) -> DomainError {
    let holder = current.map_or_else(
        || "another container".to_owned(),
        |c| format!("container {c}"),
    );
    DomainError::Fenced(FenceRefusal {
        code: FENCED.to_owned(),
        message: format!(
            "container {container_id} is fenced: {holder} has taken the town over since, so \
             this container may read but never write again"
        ),
        current_container_id: current.map(str::to_owned),
    })
}

/// 409 `container_not_current`: `container_id` has not heartbeat yet.
pub fn not_current(container_id: &str, current: Option<&str>) -> DomainError {
    let holder = current.map_or_else(
        || "no container holds the town".to_owned(),
        |c| format!("container {c} holds the town"),
    );
    DomainError::Fenced(FenceRefusal {
        code: NOT_CURRENT.to_owned(),
        message: format!(
            "container {container_id} has not heartbeat in this town ({holder}); a container \
             token writes only once its container has heartbeat"
        ),
        current_container_id: current.map(str::to_owned),
    })
}
