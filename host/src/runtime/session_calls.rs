//! Agent-state, snapshot and town calls through the session component, in
//! the domain's one wire encoding (`stasis_domain::wire`). The host checks
//! fences itself, before the component runs, so no fence travels here.

use super::{
    bindings::session::SessionComponent, conversions::domain_error, guest_state::GuestState,
};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    town::{TownCall, TownReply},
    wire,
};
use wasmtime::Store;

/// Runs an agent call on the `session` export.
pub fn agent(
    guest: &SessionComponent,
    store: &mut Store<GuestState>,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let request = wire::encode_request(call, None)?;
    let reply = guest
        .stasis_objects_session()
        .call_call(&mut *store, &request, env.now_ms, env.max_events)
        .map_err(trap)?
        .map_err(domain_error)?;
    wire::decode(&reply)
}

/// Runs a town call on the `town` export.
pub fn town(
    guest: &SessionComponent,
    store: &mut Store<GuestState>,
    call: &TownCall,
    env: &ObjectEnv,
) -> Result<TownReply, DomainError> {
    let request = wire::encode_request(call, None)?;
    let reply = guest
        .stasis_objects_town()
        .call_call(&mut *store, &request, env.now_ms)
        .map_err(trap)?
        .map_err(domain_error)?;
    wire::decode(&reply)
}

fn trap(err: wasmtime::Error) -> DomainError {
    DomainError::Storage(format!("the session component trapped: {err:#}"))
}
