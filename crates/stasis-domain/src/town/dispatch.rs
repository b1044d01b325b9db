//! Where work for an agent goes: a message for the mayor (or any agent's
//! inbox), or an explicit dispatch of one agent.
//!
//! While the town drains no dispatch is emitted: a message's is deferred
//! until the heartbeat that ends the drain, an explicit one is refused
//! (503 `town_draining`). A message is delivered only to a live session: the
//! registry (put by the current container) lists one for the agent, and the
//! current container is alive (see [`super::state`] for liveness);
//! otherwise the agent is redispatched.

use super::{
    agents::{self, AgentRef, TownAgent},
    deferred, log, registry, state,
};
use crate::{DomainError, Refusal, ids::check_id, params, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// What became of a message for the mayor or any other agent (already
/// persisted in the agent's own log at `message_seq`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MayorAction {
    /// The town drains; the agent's dispatch waits for the next container.
    Deferred,
    /// A live session of the agent runs in the current container, which is
    /// alive: hand it there.
    Deliver {
        /// The agent's session in the registry.
        session_id: String,
        /// The current container, which put the registry.
        container_id: String,
    },
    /// No live session: start the agent again from its stored state.
    Redispatch {
        /// The agent.
        agent: TownAgent,
    },
}

/// Messages remembered as routed (of every agent); the oldest go first.
const MAX_ROUTED_MESSAGES: u64 = 1_000;

/// Routes a message for the mayor, alive if it heartbeat within
/// `liveness_timeout_ms`; see [`agent_message`].
pub fn mayor_message(
    store: &impl SqlStore,
    message_seq: u64,
    liveness_timeout_ms: u64,
    now_ms: i64,
) -> Result<MayorAction, DomainError> {
    let Some(mayor) = agents::mayor(store)? else {
        return Err(DomainError::NotFound(Refusal::new(
            "mayor_not_found",
            "the town has no agent with role mayor; register one first",
        )));
    };
    route_message(store, &mayor, message_seq, liveness_timeout_ms, now_ms)
}

/// Routes a message for a registered agent; records `mayor_message` (for
/// the mayor) or `agent_message`, then `dispatch_deferred` or
/// `dispatch_agent` as the route needs. A message routed before (a retry:
/// the same seq of the agent's log) gets its route again and records
/// nothing.
pub fn agent_message(
    store: &impl SqlStore,
    wanted: &AgentRef,
    message_seq: u64,
    liveness_timeout_ms: u64,
    now_ms: i64,
) -> Result<MayorAction, DomainError> {
    let agent = registered(store, wanted)?;
    route_message(store, &agent, message_seq, liveness_timeout_ms, now_ms)
}

fn route_message(
    store: &impl SqlStore,
    agent: &TownAgent,
    message_seq: u64,
    liveness_timeout_ms: u64,
    now_ms: i64,
) -> Result<MayorAction, DomainError> {
    let is_mayor = agent.role == agents::MAYOR_ROLE;
    let first_time = remember_routed(store, agent, message_seq)?;
    if first_time {
        let kind = if is_mayor {
            log::MAYOR_MESSAGE
        } else {
            log::AGENT_MESSAGE
        };
        let data = log::MayorMessage {
            rig_id: &agent.rig_id,
            agent_id: &agent.agent_id,
            message_seq,
        };
        log::record(store, kind, &data, now_ms)?;
    }
    let town = state::load(store)?;
    if town.draining {
        if first_time {
            deferred::defer(store, agent, now_ms)?;
        }
        return Ok(MayorAction::Deferred);
    }
    let alive = town.container_alive(now_ms, liveness_timeout_ms);
    if let Some(current) = town.current_container_id.filter(|_| alive)
        && let Some(session_id) = live_session(store, &current, &agent.reference())?
    {
        return Ok(MayorAction::Deliver {
            session_id,
            container_id: current,
        });
    }
    if first_time {
        let reason = if is_mayor {
            "mayor_message"
        } else {
            "agent_message"
        };
        record_dispatch(store, agent, reason, now_ms)?;
    }
    Ok(MayorAction::Redispatch {
        agent: agent.clone(),
    })
}

/// Remembers that the message at `message_seq` was routed; false when it
/// was already.
fn remember_routed(
    store: &impl SqlStore,
    agent: &TownAgent,
    message_seq: u64,
) -> Result<bool, DomainError> {
    let known = store.execute(
        "SELECT 1 FROM routed_mayor_messages WHERE rig_id = ?1 AND agent_id = ?2 AND message_seq = ?3",
        params![agent.rig_id.as_str(), agent.agent_id.as_str(), message_seq],
    )?;
    if !known.is_empty() {
        return Ok(false);
    }
    store.run(
        "INSERT INTO routed_mayor_messages (rig_id, agent_id, message_seq) VALUES (?1, ?2, ?3)",
        params![agent.rig_id.as_str(), agent.agent_id.as_str(), message_seq],
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
    let agent = registered(store, wanted)?;
    if state::load(store)?.draining {
        return Err(DomainError::Unavailable(Refusal::new(
            "town_draining",
            "the town's container is being evicted; retry once a new container has heartbeat",
        )));
    }
    record_dispatch(store, &agent, "requested", now_ms)?;
    Ok(agent)
}

/// The agent of the directory `wanted` names, or 404 `agent_not_found`.
fn registered(store: &impl SqlStore, wanted: &AgentRef) -> Result<TownAgent, DomainError> {
    check_id("rig_id", &wanted.rig_id)?;
    check_id("agent_id", &wanted.agent_id)?;
    agents::find(store, &wanted.rig_id, &wanted.agent_id)?.ok_or_else(|| {
        DomainError::NotFound(Refusal::new(
            "agent_not_found",
            format!(
                "agent {:?} of rig {:?} is not registered in this town",
                wanted.agent_id, wanted.rig_id
            ),
        ))
    })
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
