//! The town object's operations: each call and the reply it reads.

use crate::{
    town::{
        EvictOutcome, HeartbeatOutcome, MayorAction, Redemption, RegisteredAgent, Registry,
        RegistryAgent, Standing, TownAgent, TownCall, TownEventPage, TownReply, TownState,
    },
    typed_operation::{Operation, operations},
};

/// An operation on a town's object that reads as an `R`.
pub type TownOperation<R> = Operation<TownCall, TownReply, R>;

use TownCall as C;
use TownReply as R;

operations! {
    TownOperation<TownCall, TownReply>;
    /// The town's state.
    get_state() -> TownState
        = C::GetState, R::State(state) => state;
    /// A container announces its eviction (`None`: the current one).
    evict(container_id: Option<String>, reason: Option<String>) -> EvictOutcome
        = C::Evict { container_id, reason }, R::Evicted(outcome) => outcome;
    /// A container is alive.
    heartbeat(container_id: String, idempotency_key: Option<String>) -> HeartbeatOutcome
        = C::Heartbeat { container_id, idempotency_key }, R::Heartbeat(outcome) => outcome;
    /// Replaces the process registry.
    put_registry(container_id: String, agents: Vec<RegistryAgent>) -> Registry
        = C::PutRegistry { container_id, agents }, R::Registry(registry) => registry;
    /// Puts one agent's entry of the process registry.
    put_registry_agent(container_id: String, agent: RegistryAgent) -> Registry
        = C::PutRegistryAgent { container_id, agent }, R::Registry(registry) => registry;
    /// Removes one agent's entry of the process registry.
    remove_registry_agent(rig_id: String, agent_id: String) -> Registry
        = C::RemoveRegistryAgent { rig_id, agent_id }, R::Registry(registry) => registry;
    /// The process registry.
    get_registry() -> Registry
        = C::GetRegistry, R::Registry(registry) => registry;
    /// A page of the town's log.
    read_events(after: u64, limit: u64) -> TownEventPage
        = C::ReadEvents { after, limit }, R::Events(page) => page;
    /// Registers an agent in the directory, or changes its role.
    register_agent(rig_id: String, agent_id: String, role: String) -> RegisteredAgent
        = C::RegisterAgent { rig_id, agent_id, role }, R::Registered(registered) => registered;
    /// Removes an agent from the directory; whether it was there.
    forget_agent(rig_id: String, agent_id: String) -> bool
        = C::ForgetAgent { rig_id, agent_id }, R::Forgotten(forgotten) => forgotten;
    /// Every agent of the directory, by rig then agent.
    list_agents() -> Vec<TownAgent>
        = C::ListAgents, R::Agents(agents) => agents;
    /// The user wrote to the mayor (the message is in the mayor's log); the
    /// current container is alive when it heartbeat within the timeout.
    mayor_message(message_seq: u64, liveness_timeout_ms: u64) -> MayorAction
        = C::MayorMessage { message_seq, liveness_timeout_ms }, R::MayorMessage(action) => action;
    /// A message for a registered agent (already in its log).
    agent_message(rig_id: String, agent_id: String, message_seq: u64, liveness_timeout_ms: u64) -> MayorAction
        = C::AgentMessage { rig_id, agent_id, message_seq, liveness_timeout_ms }, R::MayorMessage(action) => action;
    /// Dispatches one registered agent.
    dispatch(rig_id: String, agent_id: String) -> TownAgent
        = C::Dispatch { rig_id, agent_id }, R::Dispatched(agent) => agent;
    /// Where a container stands.
    standing(container_id: String) -> Standing
        = C::Standing { container_id }, R::Standing(standing) => standing;
    /// Spends a bootstrap token on a container.
    redeem_bootstrap(token_id: String, container_id: String, expires_at_ms: i64) -> Redemption
        = C::RedeemBootstrap { token_id, container_id, expires_at_ms }, R::Redeemed(redemption) => redemption;
}
