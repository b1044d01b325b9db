//! Dispatches deferred while the town drains: at most one pending per agent,
//! all released by the heartbeat that ends the drain, each exactly once.

use super::{agents::AgentRef, agents::TownAgent, log};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};

/// Defers a dispatch of `agent` until the drain ends. Repeats coalesce into
/// the one pending row, but each is recorded as `dispatch_deferred`.
pub(super) fn defer(
    store: &impl SqlStore,
    agent: &TownAgent,
    now_ms: i64,
) -> Result<(), DomainError> {
    store.run(
        "INSERT OR IGNORE INTO deferred_dispatches (rig_id, agent_id, deferred_at) VALUES (?1, ?2, ?3)",
        params![agent.rig_id.as_str(), agent.agent_id.as_str(), now_ms],
    )?;
    log::record(
        store,
        log::DISPATCH_DEFERRED,
        &log::AgentDispatch {
            rig_id: &agent.rig_id,
            agent_id: &agent.agent_id,
            reason: None,
        },
        now_ms,
    )?;
    Ok(())
}

/// Takes every pending dispatch (oldest first), records a `dispatch_agent`
/// event for each and returns the agents with their current roles.
pub(super) fn release(store: &impl SqlStore, now_ms: i64) -> Result<Vec<TownAgent>, DomainError> {
    let rows = store.execute(
        "SELECT d.rig_id, d.agent_id, a.role FROM deferred_dispatches d
         JOIN town_agents a ON a.rig_id = d.rig_id AND a.agent_id = d.agent_id
         ORDER BY d.deferred_at, d.rig_id, d.agent_id",
        Vec::new(),
    )?;
    store.run("DELETE FROM deferred_dispatches", Vec::new())?;
    let mut released = Vec::with_capacity(rows.len());
    for row in rows {
        let agent = TownAgent {
            rig_id: row.text(0)?.to_owned(),
            agent_id: row.text(1)?.to_owned(),
            role: row.text(2)?.to_owned(),
        };
        log::record(
            store,
            log::DISPATCH_AGENT,
            &log::AgentDispatch {
                rig_id: &agent.rig_id,
                agent_id: &agent.agent_id,
                reason: Some("released"),
            },
            now_ms,
        )?;
        released.push(agent);
    }
    Ok(released)
}

/// Drops the pending dispatch of a forgotten agent.
pub(super) fn cancel(store: &impl SqlStore, agent: &AgentRef) -> Result<(), DomainError> {
    store.run(
        "DELETE FROM deferred_dispatches WHERE rig_id = ?1 AND agent_id = ?2",
        params![agent.rig_id.as_str(), agent.agent_id.as_str()],
    )?;
    Ok(())
}
