//! The town's state row: draining, the evicting and the current container,
//! the last heartbeat, and from it whether the current container is alive.
//!
//! **Liveness.** A container is alive while it heartbeats: the current
//! container is alive when its newest heartbeat is at most the liveness
//! timeout old (each runtime's setting, [`DEFAULT_LIVENESS_TIMEOUT_MS`] by
//! default). Only heartbeats that count move `last_heartbeat_at`: the
//! current container's, or a new one's taking the town over. A fenced one
//! (a superseded or an evicted container's) changes nothing, so a zombie
//! never makes a dead town look alive.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::agents::{self, AgentRef};
use crate::{
    DomainError, params,
    sql::{Row, RowExt, SqlStore, SqlValue, StorageError},
};
use serde::{Deserialize, Serialize};

/// What `GET /api/towns/{town}` shows, less the town id (the API adds it:
/// the object never needs its own name). The eviction's reason is kept in
/// the state row and in the `container_eviction` event, not shown here:
/// the documented shape is exact.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TownState {
    /// An eviction was announced and no new container has heartbeat since.
    pub draining: bool,
    /// The container whose eviction started the drain.
    pub evicting_container_id: Option<String>,
    /// The container that last took the town over.
    pub current_container_id: Option<String>,
    /// The newest heartbeat that counted (from the container holding the
    /// town), ms since the epoch.
    pub last_heartbeat_at: Option<i64>,
    /// The agent registered with role `mayor`.
    pub mayor: Option<AgentRef>,
}

/// How long the current container counts as alive after its newest
/// heartbeat unless the runtime sets another timeout: 60 s.
pub const DEFAULT_LIVENESS_TIMEOUT_MS: u64 = 60_000;

impl TownState {
    /// Whether the current container is alive at `now_ms`: it heartbeat at
    /// most `timeout_ms` ago.
    pub fn container_alive(&self, now_ms: i64, timeout_ms: u64) -> bool {
        alive(
            self.current_container_id.as_deref(),
            self.last_heartbeat_at,
            now_ms,
            timeout_ms,
        )
    }
}

/// The stored row, without the mayor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct StateRow {
    /// See [`TownState::draining`].
    pub draining: bool,
    /// See [`TownState::evicting_container_id`].
    pub evicting_container_id: Option<String>,
    /// The `reason` given with the eviction that started the drain.
    pub eviction_reason: Option<String>,
    /// See [`TownState::current_container_id`].
    pub current_container_id: Option<String>,
    /// See [`TownState::last_heartbeat_at`].
    pub last_heartbeat_at: Option<i64>,
}

impl StateRow {
    /// See [`TownState::container_alive`].
    pub fn container_alive(&self, now_ms: i64, timeout_ms: u64) -> bool {
        alive(
            self.current_container_id.as_deref(),
            self.last_heartbeat_at,
            now_ms,
            timeout_ms,
        )
    }
}

fn alive(
    current: Option<&str>,
    last_heartbeat_at: Option<i64>,
    now_ms: i64,
    timeout_ms: u64,
) -> bool {
    let timeout = i64::try_from(timeout_ms).unwrap_or(i64::MAX);
    current.is_some() && last_heartbeat_at.is_some_and(|at| now_ms.saturating_sub(at) <= timeout)
}

/// The town's state as the API shows it.
pub fn get(store: &impl SqlStore) -> Result<TownState, DomainError> {
    let row = load(store)?;
    let mayor = agents::mayor(store)?.map(|m| m.reference());
    Ok(TownState {
        draining: row.draining,
        evicting_container_id: row.evicting_container_id,
        current_container_id: row.current_container_id,
        last_heartbeat_at: row.last_heartbeat_at,
        mayor,
    })
}

/// Reads the row; a town never seen reads as empty.
pub(super) fn load(store: &impl SqlStore) -> Result<StateRow, DomainError> {
    let found = store.first_row(
        "SELECT draining, evicting_container_id, eviction_reason, current_container_id, last_heartbeat_at
         FROM town_state WHERE id = 1",
        Vec::new(),
    )?;
    let Some(row) = found else {
        return Ok(StateRow::default());
    };
    Ok(StateRow {
        draining: row.int(0)? != 0,
        evicting_container_id: row.opt_text(1)?.map(str::to_owned),
        eviction_reason: row.opt_text(2)?.map(str::to_owned),
        current_container_id: row.opt_text(3)?.map(str::to_owned),
        last_heartbeat_at: opt_int(&row, 4)?,
    })
}

/// Writes the whole row.
pub(super) fn save(store: &impl SqlStore, row: &StateRow) -> Result<(), DomainError> {
    store.run(
        "UPDATE town_state SET draining = ?1, evicting_container_id = ?2, eviction_reason = ?3,
            current_container_id = ?4, last_heartbeat_at = ?5
         WHERE id = 1",
        params![
            i64::from(row.draining),
            row.evicting_container_id.as_deref(),
            row.eviction_reason.as_deref(),
            row.current_container_id.as_deref(),
            row.last_heartbeat_at
        ],
    )?;
    Ok(())
}

/// An integer column that may be NULL.
fn opt_int(row: &Row, index: usize) -> Result<Option<i64>, StorageError> {
    match row.get(index) {
        Some(SqlValue::Null) => Ok(None),
        _ => row.int(index).map(Some),
    }
}
