//! Which containers have held the town, and the epoch each got.
//!
//! A container becomes current with its heartbeat and stays current until
//! another one takes over. Each takeover gets the next epoch (1, 2, ...),
//! and the containers that held the town are remembered (the newest
//! [`REMEMBERED_CONTAINERS`]): a superseded one never becomes current again,
//! and a container token's writes are checked against them ([`standing`],
//! [`require_current`]; see [`crate::fence`]).

use super::state;
use crate::{
    DomainError,
    fence::{self, Fence},
    params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// Containers remembered with their epochs; the oldest are forgotten first.
/// Each boot picks a new id, so this covers far more restarts than can
/// overlap. A forgotten container counts as one that never held the town.
pub const REMEMBERED_CONTAINERS: u64 = 100;

/// Where a container stands in its town.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "standing", rename_all = "snake_case")]
pub enum Standing {
    /// It holds the town, since the takeover numbered `epoch`.
    Current {
        /// Its takeover's number.
        epoch: u64,
    },
    /// It held the town once; another container has taken over since.
    Superseded {
        /// The container holding the town now.
        current_container_id: Option<String>,
    },
    /// It never held the town (it has not heartbeat, or was evicted before
    /// it could take over).
    NotCurrent {
        /// The container holding the town now, if any.
        current_container_id: Option<String>,
    },
}

impl Standing {
    /// The fence of `container_id`'s writes, or the 409 that refuses them.
    pub fn fence(self, container_id: &str) -> Result<Fence, DomainError> {
        match self {
            Self::Current { epoch } => Ok(Fence {
                container_id: container_id.to_owned(),
                epoch,
            }),
            Self::Superseded {
                current_container_id,
            } => Err(fence::superseded(
                container_id,
                current_container_id.as_deref(),
            )),
            Self::NotCurrent {
                current_container_id,
            } => Err(fence::not_current(
                container_id,
                current_container_id.as_deref(),
            )),
        }
    }
}

/// Where `container_id` stands.
pub fn standing(store: &impl SqlStore, container_id: &str) -> Result<Standing, DomainError> {
    let current_container_id = state::load(store)?.current_container_id;
    let is_current = current_container_id.as_deref() == Some(container_id);
    Ok(match (is_current, epoch_of(store, container_id)?) {
        (true, Some(epoch)) => Standing::Current { epoch },
        (true, None) => {
            return Err(DomainError::Storage(format!(
                "the current container {container_id} has no epoch"
            )));
        }
        (false, Some(_)) => Standing::Superseded {
            current_container_id,
        },
        (false, None) => Standing::NotCurrent {
            current_container_id,
        },
    })
}

/// Refuses a town write under `fence` unless its container holds the town
/// at that very epoch.
pub fn require_current(store: &impl SqlStore, fence: &Fence) -> Result<(), DomainError> {
    match standing(store, &fence.container_id)? {
        Standing::Current { epoch } if epoch == fence.epoch => Ok(()),
        Standing::Current { .. } => Err(fence::superseded(&fence.container_id, None)),
        other => other.fence(&fence.container_id).map(drop),
    }
}

/// True when `container_id` held the town once (and is remembered).
pub(super) fn held_before(store: &impl SqlStore, container_id: &str) -> Result<bool, DomainError> {
    Ok(epoch_of(store, container_id)?.is_some())
}

/// Records that `container_id` takes the town over now; returns its epoch.
pub(super) fn take_over(
    store: &impl SqlStore,
    container_id: &str,
    now_ms: i64,
) -> Result<u64, DomainError> {
    let epoch = store
        .first_row(
            "SELECT COALESCE(MAX(epoch), 0) + 1 FROM container_epochs",
            Vec::new(),
        )?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(1);
    store.run(
        "INSERT INTO container_epochs (container_id, epoch, became_current_at) VALUES (?1, ?2, ?3)",
        params![container_id, epoch, now_ms],
    )?;
    if epoch > REMEMBERED_CONTAINERS {
        store.run(
            "DELETE FROM container_epochs WHERE epoch <= ?1",
            params![epoch - REMEMBERED_CONTAINERS],
        )?;
    }
    Ok(epoch)
}

fn epoch_of(store: &impl SqlStore, container_id: &str) -> Result<Option<u64>, DomainError> {
    Ok(store
        .first_row(
            "SELECT epoch FROM container_epochs WHERE container_id = ?1",
            params![container_id],
        )?
        .map(|row| row.uint(0))
        .transpose()?)
}
