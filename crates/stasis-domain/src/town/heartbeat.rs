//! Heartbeats: a container says it is alive, and may take the town over.
//!
//! A container that announced its eviction changes nothing, not even
//! `last_heartbeat_at`: its late heartbeat is exactly what must not end a
//! drain, nor keep a dead town looking alive (see [`super::state`]). Nor
//! does a container that held the town once and was superseded since: it
//! never becomes current again (see [`super::containers`]), and its answer
//! names the container holding the town. Every other heartbeat refreshes
//! `last_heartbeat_at` and ends the drain (and becomes current with the
//! next epoch, records `container_ready`, releases the deferred
//! dispatches); without a drain, a new container becomes current and a
//! repeat from the current one records nothing.
//!
//! A heartbeat may carry an idempotency key. The dispatches it released
//! are then remembered under that key, and a retry with the same key (after
//! a lost answer, or a failure while the answer was built) gets them again
//! and changes nothing else but the liveness time (of a container that is
//! not fenced). Without a key each deferred dispatch is released exactly
//! once.

use super::{
    agents::TownAgent, containers, deferred, eviction, log, registry, registry::Registry, state,
};
use crate::{
    DomainError,
    ids::check_id,
    params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatOutcome {
    /// Whether the town is still draining after this heartbeat.
    pub draining: bool,
    /// This heartbeat ended the drain.
    pub cleared_drain: bool,
    /// This container announced its eviction: it took nothing over. Left
    /// out of the JSON when false.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub evicted: bool,
    /// Set when this container held the town once and another has taken
    /// over since: it took nothing over. Names the container holding the
    /// town. Left out of the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// The process registry (no container, no agents before the first put).
    pub registry: Registry,
    /// The dispatches deferred while draining, released by this heartbeat
    /// (each exactly once); the API rebuilds each into a dispatch.
    pub released: Vec<TownAgent>,
}

/// Heartbeats remembered with their idempotency keys; the oldest go first.
const MAX_REPLAYS: u64 = 100;

/// Records a heartbeat from `container_id`; see the module doc for
/// `idempotency_key`.
pub fn heartbeat(
    store: &impl SqlStore,
    container_id: &str,
    idempotency_key: Option<&str>,
    now_ms: i64,
) -> Result<HeartbeatOutcome, DomainError> {
    check_id("container_id", container_id)?;
    let mut row = state::load(store)?;
    let evicted = eviction::was_evicted(store, container_id)?;
    let is_current = row.current_container_id.as_deref() == Some(container_id);
    let superseded_by = if !is_current && containers::held_before(store, container_id)? {
        Some(row.current_container_id.clone().unwrap_or_default())
    } else {
        None
    };
    // A fenced heartbeat changes nothing in the town, its liveness included.
    let blocked = evicted || superseded_by.is_some();
    if !blocked {
        row.last_heartbeat_at = Some(now_ms);
    }
    if let Some(key) = idempotency_key
        && let Some(released) = replayed(store, container_id, key)?
    {
        if !blocked {
            state::save(store, &row)?;
        }
        return Ok(HeartbeatOutcome {
            draining: row.draining,
            cleared_drain: false,
            evicted,
            superseded_by,
            registry: registry::get(store)?,
            released,
        });
    }
    let (cleared_drain, released) = if blocked {
        (false, Vec::new())
    } else {
        let cleared_drain = row.draining;
        take_over(store, &mut row, container_id, !is_current, now_ms)?;
        let released = if cleared_drain {
            deferred::release(store, now_ms)?
        } else {
            Vec::new()
        };
        (cleared_drain, released)
    };
    if let Some(key) = idempotency_key {
        remember(store, container_id, key, &released, now_ms)?;
    }
    Ok(HeartbeatOutcome {
        draining: row.draining,
        cleared_drain,
        evicted,
        superseded_by,
        registry: registry::get(store)?,
        released,
    })
}

/// A heartbeat that is not blocked ends a drain and, from a new container,
/// makes it the current one; either is logged as `container.ready`.
fn take_over(
    store: &impl SqlStore,
    row: &mut state::StateRow,
    container_id: &str,
    is_new: bool,
    now_ms: i64,
) -> Result<(), DomainError> {
    let cleared_drain = row.draining;
    if cleared_drain {
        row.draining = false;
        row.evicting_container_id = None;
        row.eviction_reason = None;
    }
    if is_new {
        row.current_container_id = Some(container_id.to_owned());
        containers::take_over(store, container_id, now_ms)?;
    }
    state::save(store, row)?;
    if cleared_drain || is_new {
        log::record(
            store,
            log::CONTAINER_READY,
            &log::ContainerReady {
                container_id,
                cleared_drain,
            },
            now_ms,
        )?;
    }
    Ok(())
}

/// What an earlier heartbeat with this key released, if there was one.
fn replayed(
    store: &impl SqlStore,
    container_id: &str,
    key: &str,
) -> Result<Option<Vec<TownAgent>>, DomainError> {
    let rows = store.execute(
        "SELECT released FROM heartbeat_replays WHERE container_id = ?1 AND idempotency_key = ?2",
        params![container_id, key],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    serde_json::from_str(row.text(0)?)
        .map(Some)
        .map_err(|err| DomainError::Storage(format!("a remembered heartbeat is unreadable: {err}")))
}

fn remember(
    store: &impl SqlStore,
    container_id: &str,
    key: &str,
    released: &[TownAgent],
    now_ms: i64,
) -> Result<(), DomainError> {
    let released = serde_json::to_string(released)
        .map_err(|err| DomainError::Storage(format!("remembering a heartbeat: {err}")))?;
    store.run(
        "INSERT INTO heartbeat_replays (container_id, idempotency_key, released, recorded_at)
         VALUES (?1, ?2, ?3, ?4)",
        params![container_id, key, released.as_str(), now_ms],
    )?;
    store.run(
        "DELETE FROM heartbeat_replays WHERE rowid IN (SELECT rowid FROM heartbeat_replays
         ORDER BY recorded_at DESC, container_id, idempotency_key LIMIT -1 OFFSET ?1)",
        params![MAX_REPLAYS],
    )?;
    Ok(())
}
