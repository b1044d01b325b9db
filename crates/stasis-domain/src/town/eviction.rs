//! Eviction: a container announces it is going away, and the town drains.
//!
//! The first eviction wins: while draining, another eviction (a retry from
//! the same container, or one from any other) records no event and leaves
//! `evicting_container_id` alone. Every container that announced its
//! eviction is remembered, so that neither its late heartbeat nor a retried
//! eviction after a successor took over can disturb the town.
//!
//! An eviction that names no container (Gastown's container sends an empty
//! body on SIGTERM) is the current container's.

use super::{log, state};
use crate::{
    DomainError,
    ids::check_id,
    params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The longest eviction reason kept, in bytes.
pub const MAX_REASON_BYTES: usize = 1024;
/// Evicted container ids remembered; the oldest are forgotten first. Each
/// boot picks a new id, so this covers far more restarts than can overlap.
pub const REMEMBERED_EVICTIONS: u64 = 100;

/// The answer to an eviction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictOutcome {
    /// Whether the town is draining now (false only when an already
    /// evicted container repeats itself after a successor took over).
    pub draining: bool,
    /// The container whose eviction started the current drain.
    pub evicting_container_id: Option<String>,
    /// The town was draining already; nothing was recorded.
    pub already_draining: bool,
    /// This container had announced its eviction before; nothing was
    /// recorded. Left out of the JSON when false, which keeps the
    /// documented shape for every ordinary eviction.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub already_evicted: bool,
}

/// Sets draining on the first eviction and records `container_eviction`;
/// `None` names the current container.
pub fn evict(
    store: &impl SqlStore,
    container_id: Option<&str>,
    reason: Option<&str>,
    now_ms: i64,
) -> Result<EvictOutcome, DomainError> {
    let current;
    let container_id = match container_id {
        Some(named) => named,
        None => {
            current = current_container(store)?;
            current.as_str()
        }
    };
    check_id("container_id", container_id)?;
    if let Some(reason) = reason
        && reason.len() > MAX_REASON_BYTES
    {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("reason holds at most {MAX_REASON_BYTES} bytes"),
        ));
    }
    let already_evicted = was_evicted(store, container_id)?;
    let mut row = state::load(store)?;
    if row.draining || already_evicted {
        // A container that says it is going away must never end a drain,
        // even when another container's eviction started it.
        if !already_evicted {
            remember(store, container_id, now_ms)?;
        }
        return Ok(EvictOutcome {
            draining: row.draining,
            evicting_container_id: row.evicting_container_id,
            already_draining: row.draining,
            already_evicted,
        });
    }
    row.draining = true;
    row.evicting_container_id = Some(container_id.to_owned());
    row.eviction_reason = reason.map(str::to_owned);
    state::save(store, &row)?;
    remember(store, container_id, now_ms)?;
    log::record(
        store,
        log::CONTAINER_EVICTION,
        &log::ContainerEviction {
            container_id,
            reason,
        },
        now_ms,
    )?;
    Ok(EvictOutcome {
        draining: true,
        evicting_container_id: row.evicting_container_id,
        already_draining: false,
        already_evicted: false,
    })
}

/// The container an eviction that names none is about: the current one.
fn current_container(store: &impl SqlStore) -> Result<String, DomainError> {
    state::load(store)?.current_container_id.ok_or_else(|| {
        DomainError::Conflict(crate::Refusal::new(
            "no_current_container",
            "no container has heartbeat in this town, so an eviction must name its \
             container_id",
        ))
    })
}

/// True when `container_id` announced its eviction (and is still
/// remembered).
pub fn was_evicted(store: &impl SqlStore, container_id: &str) -> Result<bool, DomainError> {
    Ok(store
        .first_row(
            "SELECT 1 FROM evicted_containers WHERE container_id = ?1",
            params![container_id],
        )?
        .is_some())
}

/// Adds a container not yet in the evicted set and keeps the set bounded.
fn remember(store: &impl SqlStore, container_id: &str, now_ms: i64) -> Result<(), DomainError> {
    let next = store
        .first_row(
            "SELECT COALESCE(MAX(ord), 0) + 1 FROM evicted_containers",
            Vec::new(),
        )?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(1);
    store.run(
        "INSERT INTO evicted_containers (container_id, ord, evicted_at) VALUES (?1, ?2, ?3)",
        params![container_id, next, now_ms],
    )?;
    if next > REMEMBERED_EVICTIONS {
        store.run(
            "DELETE FROM evicted_containers WHERE ord <= ?1",
            params![next - REMEMBERED_EVICTIONS],
        )?;
    }
    Ok(())
}
