//! The town's own event log: what happened to the town, in order.
//!
//! Seqs start at 1 and grow by one per event with no gaps; retention drops
//! the oldest beyond [`MAX_TOWN_EVENTS`], so a cursor older than what is
//! kept gets [`DomainError::CursorExpired`], as in an agent's log.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use crate::{
    DomainError, limits, params,
    sql::{Row, RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Town events kept; the oldest go first.
pub const MAX_TOWN_EVENTS: u64 = 10_000;

/// A container announced its eviction: `{container_id, reason}`.
pub const CONTAINER_EVICTION: &str = "container_eviction";
/// A container took the town over: `{container_id, cleared_drain}`.
pub const CONTAINER_READY: &str = "container_ready";
/// An agent is to be (re)started: `{rig_id, agent_id, reason}`.
pub const DISPATCH_AGENT: &str = "dispatch_agent";
/// A dispatch waits for the drain to end: `{rig_id, agent_id}`.
pub const DISPATCH_DEFERRED: &str = "dispatch_deferred";
/// The registry was replaced: `{container_id, agents}` (a count).
pub const REGISTRY_UPDATED: &str = "registry_updated";
/// The user wrote to the mayor: `{rig_id, agent_id, message_seq}`.
pub const MAYOR_MESSAGE: &str = "mayor_message";
/// A message reached another agent's inbox: `{rig_id, agent_id,
/// message_seq}`.
pub const AGENT_MESSAGE: &str = "agent_message";

/// One town event.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TownEvent {
    /// Position in the town's log.
    pub seq: u64,
    /// One of the type constants of this module.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The payload.
    pub data: Value,
    /// When it was recorded, ms since the epoch.
    pub created_at: i64,
}

/// One page of the town's log.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TownEventPage {
    /// The events, in seq order.
    pub events: Vec<TownEvent>,
    /// Resume from here.
    pub next_after: u64,
    /// More events follow `next_after`.
    pub has_more: bool,
    /// The oldest seq still readable (0 while the log is empty).
    pub first_seq: u64,
    /// The newest seq (0 while the log is empty).
    pub last_seq: u64,
}

/// The data of `container_eviction`.
#[derive(Serialize)]
pub(super) struct ContainerEviction<'a> {
    pub container_id: &'a str,
    pub reason: Option<&'a str>,
}

/// The data of `container_ready`.
#[derive(Serialize)]
pub(super) struct ContainerReady<'a> {
    pub container_id: &'a str,
    pub cleared_drain: bool,
}

/// The data of `dispatch_agent` (with a reason) and `dispatch_deferred`
/// (without).
#[derive(Serialize)]
pub(super) struct AgentDispatch<'a> {
    pub rig_id: &'a str,
    pub agent_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'a str>,
}

/// The data of `registry_updated`.
#[derive(Serialize)]
pub(super) struct RegistryUpdated<'a> {
    pub container_id: &'a str,
    pub agents: usize,
}

/// The data of `mayor_message` and `agent_message`.
#[derive(Serialize)]
pub(super) struct MayorMessage<'a> {
    pub rig_id: &'a str,
    pub agent_id: &'a str,
    pub message_seq: u64,
}

/// Appends one event and applies retention; returns its seq.
pub(super) fn record(
    store: &impl SqlStore,
    event_type: &str,
    data: &impl Serialize,
    now_ms: i64,
) -> Result<u64, DomainError> {
    let data = serde_json::to_string(data)
        .map_err(|err| DomainError::Storage(format!("encoding a town event: {err}")))?;
    let (_, last_seq) = bounds(store)?;
    let seq = last_seq + 1;
    store.run(
        "INSERT INTO town_events (seq, type, data, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![seq, event_type, data, now_ms],
    )?;
    if seq > MAX_TOWN_EVENTS {
        store.run(
            "DELETE FROM town_events WHERE seq <= ?1",
            params![seq - MAX_TOWN_EVENTS],
        )?;
    }
    Ok(seq)
}

/// Events with seq > `after`, at most `limit` (1 to
/// [`limits::MAX_READ_LIMIT`]).
pub fn read(store: &impl SqlStore, after: u64, limit: u64) -> Result<TownEventPage, DomainError> {
    let max = u64::from(limits::MAX_READ_LIMIT);
    if limit == 0 || limit > max {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("limit must be 1 to {max}"),
        ));
    }
    let (first_seq, last_seq) = bounds(store)?;
    if first_seq > 1 && after < first_seq - 1 {
        return Err(DomainError::CursorExpired { first_seq });
    }
    let rows = store.execute(
        "SELECT seq, type, data, created_at FROM town_events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        params![after, limit + 1],
    )?;
    let has_more = u64::try_from(rows.len()).unwrap_or(u64::MAX) > limit;
    let events = rows
        .iter()
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .map(event_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    let next_after = match (has_more, events.last()) {
        (true, Some(last)) => last.seq,
        _ => after.max(last_seq),
    };
    Ok(TownEventPage {
        events,
        next_after,
        has_more,
        first_seq,
        last_seq,
    })
}

/// The oldest and newest stored seqs; (0, 0) while empty. Retention only
/// drops the oldest, so the newest stored seq is the newest ever assigned.
fn bounds(store: &impl SqlStore) -> Result<(u64, u64), DomainError> {
    let row = store.first_row(
        "SELECT COALESCE(MIN(seq), 0), COALESCE(MAX(seq), 0) FROM town_events",
        Vec::new(),
    )?;
    match row {
        Some(row) => Ok((row.uint(0)?, row.uint(1)?)),
        None => Ok((0, 0)),
    }
}

fn event_from_row(row: &Row) -> Result<TownEvent, DomainError> {
    let seq = row.uint(0)?;
    let data = serde_json::from_str(row.text(2)?).map_err(|err| {
        DomainError::Storage(format!("town event {seq}: data is not JSON: {err}"))
    })?;
    Ok(TownEvent {
        seq,
        event_type: row.text(1)?.to_owned(),
        data,
        created_at: row.int(3)?,
    })
}
