//! The calls a town object answers, as data (the edge sends them to the
//! town's Durable Object as JSON).

use super::{
    agents::{self, AgentRef, RegisteredAgent, TownAgent},
    bootstrap::{self, Redemption},
    containers::{self, Standing},
    deferred,
    dispatch::{self, MayorAction},
    eviction::{self, EvictOutcome},
    heartbeat::{self, HeartbeatOutcome},
    log::{self, TownEventPage},
    registry::{self, Registry, RegistryAgent},
    state::{self, TownState},
};
use crate::{DomainError, limits, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// What the runtime supplies to every call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TownEnv {
    /// Milliseconds since the epoch.
    pub now_ms: i64,
}

/// One operation on a town object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum TownCall {
    /// The town's state.
    GetState,
    /// A container announces its eviction.
    Evict {
        /// The container going away; `None` for the current one.
        #[serde(default)]
        container_id: Option<String>,
        /// Why, for people.
        #[serde(default)]
        reason: Option<String>,
    },
    /// A container is alive.
    Heartbeat {
        /// The container.
        container_id: String,
        /// Makes a retry get the same released dispatches again.
        #[serde(default)]
        idempotency_key: Option<String>,
    },
    /// Replace the process registry.
    PutRegistry {
        /// The container that runs the agents.
        container_id: String,
        /// The agents it runs.
        agents: Vec<RegistryAgent>,
    },
    /// Put one agent's entry of the process registry.
    PutRegistryAgent {
        /// The container that runs it.
        container_id: String,
        /// The entry.
        agent: RegistryAgent,
    },
    /// Remove one agent's entry of the process registry.
    RemoveRegistryAgent {
        /// Its rig.
        rig_id: String,
        /// The agent.
        agent_id: String,
    },
    /// The process registry.
    GetRegistry,
    /// A page of the town's log.
    ReadEvents {
        /// Exclusive cursor.
        #[serde(default)]
        after: u64,
        /// At most this many events.
        #[serde(default = "default_read_limit")]
        limit: u64,
    },
    /// Register an agent in the town's directory, or change its role.
    RegisterAgent {
        /// Its rig.
        rig_id: String,
        /// The agent.
        agent_id: String,
        /// Its role; `mayor` for at most one agent.
        role: String,
    },
    /// Remove an agent from the directory.
    ForgetAgent {
        /// Its rig.
        rig_id: String,
        /// The agent.
        agent_id: String,
    },
    /// Every agent of the directory.
    ListAgents,
    /// The user wrote to the mayor; the message is already in the mayor's
    /// log.
    MayorMessage {
        /// Seq of that message in the mayor's log.
        message_seq: u64,
        /// The current container is alive when it heartbeat this recently.
        #[serde(default = "default_liveness")]
        liveness_timeout_ms: u64,
    },
    /// A message for any registered agent; it is already in the agent's
    /// log.
    AgentMessage {
        /// Its rig.
        rig_id: String,
        /// The agent.
        agent_id: String,
        /// Seq of that message in the agent's log.
        message_seq: u64,
        /// The current container is alive when it heartbeat this recently.
        #[serde(default = "default_liveness")]
        liveness_timeout_ms: u64,
    },
    /// Dispatch one registered agent.
    Dispatch {
        /// Its rig.
        rig_id: String,
        /// The agent.
        agent_id: String,
    },
    /// Where a container stands: current (with its epoch), superseded, or
    /// never current.
    Standing {
        /// The container.
        container_id: String,
    },
    /// Spend a bootstrap token on a container (see [`bootstrap::redeem`]).
    RedeemBootstrap {
        /// The token's id (its `jti`).
        token_id: String,
        /// The container it is exchanged for a token of.
        container_id: String,
        /// When the token expires, ms since the epoch.
        expires_at_ms: i64,
    },
}

/// The answer to a [`TownCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum TownReply {
    /// For [`TownCall::GetState`].
    State(TownState),
    /// For [`TownCall::Evict`].
    Evicted(EvictOutcome),
    /// For [`TownCall::Heartbeat`].
    Heartbeat(HeartbeatOutcome),
    /// For [`TownCall::PutRegistry`], [`TownCall::PutRegistryAgent`],
    /// [`TownCall::RemoveRegistryAgent`] and [`TownCall::GetRegistry`].
    Registry(Registry),
    /// For [`TownCall::ReadEvents`].
    Events(TownEventPage),
    /// For [`TownCall::RegisterAgent`].
    Registered(RegisteredAgent),
    /// For [`TownCall::ForgetAgent`]: whether the agent was registered.
    Forgotten(bool),
    /// For [`TownCall::ListAgents`], by rig then agent.
    Agents(Vec<TownAgent>),
    /// For [`TownCall::MayorMessage`] and [`TownCall::AgentMessage`].
    MayorMessage(MayorAction),
    /// For [`TownCall::Dispatch`]: the agent to dispatch, with its role.
    Dispatched(TownAgent),
    /// For [`TownCall::Standing`].
    Standing(Standing),
    /// For [`TownCall::RedeemBootstrap`].
    Redeemed(Redemption),
}

fn default_liveness() -> u64 {
    state::DEFAULT_LIVENESS_TIMEOUT_MS
}

fn default_read_limit() -> u64 {
    u64::from(limits::DEFAULT_READ_LIMIT)
}

/// Runs one call against the town's store. The caller wraps it in one
/// transaction and rolls back on error.
pub fn execute(
    store: &impl SqlStore,
    call: &TownCall,
    env: &TownEnv,
) -> Result<TownReply, DomainError> {
    let now = env.now_ms;
    Ok(match call {
        TownCall::GetState => TownReply::State(state::get(store)?),
        TownCall::Evict {
            container_id,
            reason,
        } => TownReply::Evicted(eviction::evict(
            store,
            container_id.as_deref(),
            reason.as_deref(),
            now,
        )?),
        TownCall::Heartbeat {
            container_id,
            idempotency_key,
        } => TownReply::Heartbeat(heartbeat::heartbeat(
            store,
            container_id,
            idempotency_key.as_deref(),
            now,
        )?),
        TownCall::PutRegistry {
            container_id,
            agents,
        } => TownReply::Registry(registry::put(store, container_id, agents, now)?),
        TownCall::PutRegistryAgent {
            container_id,
            agent,
        } => TownReply::Registry(registry::put_agent(store, container_id, agent, now)?),
        TownCall::RemoveRegistryAgent { rig_id, agent_id } => {
            TownReply::Registry(registry::remove_agent(store, rig_id, agent_id, now)?)
        }
        TownCall::GetRegistry => TownReply::Registry(registry::get(store)?),
        TownCall::ReadEvents { after, limit } => {
            TownReply::Events(log::read(store, *after, *limit)?)
        }
        TownCall::RegisterAgent {
            rig_id,
            agent_id,
            role,
        } => {
            let wanted = TownAgent {
                rig_id: rig_id.clone(),
                agent_id: agent_id.clone(),
                role: role.clone(),
            };
            TownReply::Registered(agents::register(store, &wanted, now)?)
        }
        TownCall::ForgetAgent { rig_id, agent_id } => {
            let agent = agent_ref(rig_id, agent_id);
            let forgotten = agents::forget(store, &agent)?;
            if forgotten {
                // A dispatch deferred for an agent the town no longer has
                // would be released into nothing.
                deferred::cancel(store, &agent)?;
            }
            TownReply::Forgotten(forgotten)
        }
        TownCall::ListAgents => TownReply::Agents(agents::list(store)?),
        TownCall::MayorMessage {
            message_seq,
            liveness_timeout_ms,
        } => TownReply::MayorMessage(dispatch::mayor_message(
            store,
            *message_seq,
            *liveness_timeout_ms,
            now,
        )?),
        TownCall::AgentMessage {
            rig_id,
            agent_id,
            message_seq,
            liveness_timeout_ms,
        } => TownReply::MayorMessage(dispatch::agent_message(
            store,
            &agent_ref(rig_id, agent_id),
            *message_seq,
            *liveness_timeout_ms,
            now,
        )?),
        TownCall::Dispatch { rig_id, agent_id } => TownReply::Dispatched(dispatch::dispatch(
            store,
            &agent_ref(rig_id, agent_id),
            now,
        )?),
        TownCall::Standing { container_id } => {
            TownReply::Standing(containers::standing(store, container_id)?)
        }
        TownCall::RedeemBootstrap {
            token_id,
            container_id,
            expires_at_ms,
        } => TownReply::Redeemed(bootstrap::redeem(
            store,
            token_id,
            container_id,
            *expires_at_ms,
            now,
        )?),
    })
}

/// [`execute`] for a write that may come from a container token: with a
/// `fence`, a guarded call ([`guards_town_call`]) runs only
/// while the fence's container holds the town, checked in the same
/// transaction.
pub fn execute_fenced(
    store: &impl SqlStore,
    call: &TownCall,
    env: &TownEnv,
    fence: Option<&crate::fence::Fence>,
) -> Result<TownReply, DomainError> {
    if let Some(fence) = fence
        && guards_town_call(call)
    {
        containers::require_current(store, fence)?;
    }
    execute(store, call, env)
}

/// Whether a fenced town call is checked ([`crate::fence`]): every call that
/// changes the town but a heartbeat, which has its own rule (a superseded
/// container's heartbeat answers without taking anything over).
pub fn guards_town_call(call: &TownCall) -> bool {
    is_write(call) && !matches!(call, TownCall::Heartbeat { .. })
}

/// True when the call may change the object (and so needs a durable commit).
pub fn is_write(call: &TownCall) -> bool {
    !matches!(
        call,
        TownCall::GetState
            | TownCall::GetRegistry
            | TownCall::ReadEvents { .. }
            | TownCall::ListAgents
            | TownCall::Standing { .. }
    )
}

fn agent_ref(rig_id: &str, agent_id: &str) -> AgentRef {
    AgentRef {
        rig_id: rig_id.to_owned(),
        agent_id: agent_id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_town_calls_that_change_the_object_are_guarded() {
        assert!(guards_town_call(&TownCall::PutRegistry {
            container_id: "c".into(),
            agents: Vec::new(),
        }));
        assert!(!guards_town_call(&TownCall::Heartbeat {
            container_id: "c".into(),
            idempotency_key: None,
        }));
        assert!(!guards_town_call(&TownCall::GetState));
    }
}
