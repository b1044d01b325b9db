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
use crate::{DomainError, Refusal, ids::check_id, sql::SqlStore};
use serde::{Deserialize, Serialize};
use serde_json::json;

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

/// Routes a message for the mayor; records `mayor_message`, then
/// `dispatch_deferred` or `dispatch_agent` as the route needs.
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
    log::record(
        store,
        log::MAYOR_MESSAGE,
        &json!({"rig_id": mayor.rig_id, "agent_id": mayor.agent_id, "message_seq": message_seq}),
        now_ms,
    )?;
    let town = state::load(store)?;
    if town.draining {
        deferred::defer(store, &mayor, now_ms)?;
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
    record_dispatch(store, &mayor, "mayor_message", now_ms)?;
    Ok(MayorAction::Redispatch { agent: mayor })
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
        &json!({"rig_id": agent.rig_id, "agent_id": agent.agent_id, "reason": reason}),
        now_ms,
    )?;
    Ok(())
}
