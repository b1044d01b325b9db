//! Heartbeats: a container says it is alive, and may take the town over.
//!
//! Every heartbeat refreshes `last_heartbeat_at`. A container that announced
//! its eviction changes nothing else: its late heartbeat is exactly what
//! must not end a drain. Any other container ends the drain (and becomes
//! current, records `container_ready`, releases the deferred dispatches);
//! without a drain, a new container becomes current and a repeat from the
//! current one records nothing.

use super::{agents::TownAgent, deferred, eviction, log, registry, registry::Registry, state};
use crate::{DomainError, ids::check_id, sql::SqlStore};
use serde::{Deserialize, Serialize};
use serde_json::json;

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
    /// The process registry (no container, no agents before the first put).
    pub registry: Registry,
    /// The dispatches deferred while draining, released by this heartbeat
    /// (each exactly once); the API rebuilds each into a dispatch.
    pub released: Vec<TownAgent>,
}

/// Records a heartbeat from `container_id`.
pub fn heartbeat(
    store: &impl SqlStore,
    container_id: &str,
    now_ms: i64,
) -> Result<HeartbeatOutcome, DomainError> {
    check_id("container_id", container_id)?;
    let mut row = state::load(store)?;
    row.last_heartbeat_at = Some(now_ms);
    let evicted = eviction::was_evicted(store, container_id)?;
    let takes_over = !evicted && row.current_container_id.as_deref() != Some(container_id);
    let cleared_drain = !evicted && row.draining;
    if cleared_drain {
        row.draining = false;
        row.evicting_container_id = None;
        row.eviction_reason = None;
    }
    if cleared_drain || takes_over {
        row.current_container_id = Some(container_id.to_owned());
    }
    state::save(store, &row)?;
    if cleared_drain || takes_over {
        log::record(
            store,
            log::CONTAINER_READY,
            &json!({"container_id": container_id, "cleared_drain": cleared_drain}),
            now_ms,
        )?;
    }
    let released = if cleared_drain {
        deferred::release(store, now_ms)?
    } else {
        Vec::new()
    };
    Ok(HeartbeatOutcome {
        draining: row.draining,
        cleared_drain,
        evicted,
        registry: registry::get(store)?,
        released,
    })
}
