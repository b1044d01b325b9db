//! Where work for an agent goes: a message for the mayor, or an explicit
//! dispatch of one agent.
//!
//! While the town drains no dispatch is emitted: the mayor's is deferred
//! until the heartbeat that ends the drain, an explicit one is refused
//! (503 `town_draining`).

use super::{
    agents::{self, AgentRef, TownAgent},
    deferred, log, registry, state,
};
use crate::{DomainError, Refusal, ids::check_id, params, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// What became of a message for the mayor (already persisted in the
/// mayor's own log at `message_seq`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MayorAction {
    /// The town drains; the mayor's dispatch waits for the next container.
    Deferred,
    /// A live mayor session runs in the current container: hand it there.
    Deliver {
        /// The mayor's session in the registry.
        session_id: String,
        /// The current container, which put the registry.
        container_id: String,
    },
    /// No live session: start the mayor again from its stored state.
    Redispatch {
        /// The mayor.
        agent: TownAgent,
    },
}

/// Mayor messages remembered as routed; the oldest go first.
const MAX_ROUTED_MESSAGES: u64 = 1_000;

/// Routes a message for the mayor; records `mayor_message`, then
/// `dispatch_deferred` or `dispatch_agent` as the route needs. A message
/// routed before (a retry: the same seq of the mayor's log) gets its route
/// again and records nothing.
pub fn mayor_message(
    store: &impl SqlStore,
    message_seq: u64,
    now_ms: i64,
) -> Result<MayorAction, DomainError> {
    let Some(mayor) = agents::mayor(store)? else {
        return Err(DomainError::NotFound(Refusal::new(
            "mayor_not_found",
            "the town has no agent with role mayor; register one first",
        )));
    };
    let first_time = remember_routed(store, &mayor, message_seq)?;
    if first_time {
        log::record(
            store,
            log::MAYOR_MESSAGE,
            &log::MayorMessage {
                rig_id: &mayor.rig_id,
                agent_id: &mayor.agent_id,
                message_seq,
            },
            now_ms,
        )?;
    }
    let town = state::load(store)?;
    if town.draining {
        if first_time {
            deferred::defer(store, &mayor, now_ms)?;
        }
        return Ok(MayorAction::Deferred);
    }
    if let Some(current) = town.current_container_id
        && let Some(session_id) = live_session(store, &current, &mayor.reference())?
    {
        return Ok(MayorAction::Deliver {
            session_id,
            container_id: current,
        });
    }
    if first_time {
        record_dispatch(store, &mayor, "mayor_message", now_ms)?;
    }
    Ok(MayorAction::Redispatch { agent: mayor })
}

/// Remembers that the message at `message_seq` was routed; false when it
/// was already.
fn remember_routed(
    store: &impl SqlStore,
    mayor: &TownAgent,
    message_seq: u64,
) -> Result<bool, DomainError> {
    let known = store.execute(
        "SELECT 1 FROM routed_mayor_messages WHERE rig_id = ?1 AND agent_id = ?2 AND message_seq = ?3",
        params![mayor.rig_id.as_str(), mayor.agent_id.as_str(), message_seq],
    )?;
    if !known.is_empty() {
        return Ok(false);
    }
    store.run(
        "INSERT INTO routed_mayor_messages (rig_id, agent_id, message_seq) VALUES (?1, ?2, ?3)",
        params![mayor.rig_id.as_str(), mayor.agent_id.as_str(), message_seq],
    )?;
    store.run(
        "DELETE FROM routed_mayor_messages WHERE rowid IN (SELECT rowid FROM routed_mayor_messages
         ORDER BY rowid DESC LIMIT -1 OFFSET ?1)",
        params![MAX_ROUTED_MESSAGES],
    )?;
    Ok(true)
}

/// Dispatches one registered agent; refused while the town drains.
pub fn dispatch(
    store: &impl SqlStore,
    wanted: &AgentRef,
    now_ms: i64,
) -> Result<TownAgent, DomainError> {
    check_id("rig_id", &wanted.rig_id)?;
    check_id("agent_id", &wanted.agent_id)?;
    let Some(agent) = agents::find(store, &wanted.rig_id, &wanted.agent_id)? else {
        return Err(DomainError::NotFound(Refusal::new(
            "agent_not_found",
            format!(
                "agent {:?} of rig {:?} is not registered in this town",
                wanted.agent_id, wanted.rig_id
            ),
        )));
    };
    if state::load(store)?.draining {
        return Err(DomainError::Unavailable(Refusal::new(
            "town_draining",
            "the town's container is being evicted; retry once a new container has heartbeat",
        )));
    }
    record_dispatch(store, &agent, "requested", now_ms)?;
    Ok(agent)
}

/// The agent's session in the registry, if the current container put it.
fn live_session(
    store: &impl SqlStore,
    current: &str,
    agent: &AgentRef,
) -> Result<Option<String>, DomainError> {
    let registry = registry::get(store)?;
    if registry.container_id.as_deref() != Some(current) {
        return Ok(None);
    }
    Ok(registry
        .agents
        .into_iter()
        .find(|a| a.rig_id == agent.rig_id && a.agent_id == agent.agent_id)
        .and_then(|a| a.session_id))
}

fn record_dispatch(
    store: &impl SqlStore,
    agent: &TownAgent,
    reason: &str,
    now_ms: i64,
) -> Result<(), DomainError> {
    log::record(
        store,
        log::DISPATCH_AGENT,
        &log::AgentDispatch {
            rig_id: &agent.rig_id,
            agent_id: &agent.agent_id,
            reason: Some(reason),
        },
        now_ms,
    )?;
    Ok(())
}
