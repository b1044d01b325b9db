//! Agent-state and town calls through the session component, as the
//! domain's call data in JSON.

use super::{
    bindings::from_wit_error, bindings::session::SessionComponent, guest_state::GuestState,
};
use serde::{Serialize, de::DeserializeOwned};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    town::{TownCall, TownReply},
};
use wasmtime::Store;

/// Runs an agent call on the `session` export.
pub fn agent(
    guest: &SessionComponent,
    store: &mut Store<GuestState>,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let request = encode(call)?;
    let reply = guest
        .stasis_objects_session()
        .call_call(&mut *store, &request, env.now_ms, env.max_events)
        .map_err(trap)?
        .map_err(from_wit_error)?;
    decode(&reply)
}

/// Runs a town call on the `town` export.
pub fn town(
    guest: &SessionComponent,
    store: &mut Store<GuestState>,
    call: &TownCall,
    env: &ObjectEnv,
) -> Result<TownReply, DomainError> {
    let request = encode(call)?;
    let reply = guest
        .stasis_objects_town()
        .call_call(&mut *store, &request, env.now_ms)
        .map_err(trap)?
        .map_err(from_wit_error)?;
    decode(&reply)
}

fn trap(err: wasmtime::Error) -> DomainError {
    DomainError::Storage(format!("the session component trapped: {err:#}"))
}

fn encode(call: &impl Serialize) -> Result<String, DomainError> {
    serde_json::to_string(call).map_err(|err| DomainError::Storage(err.to_string()))
}

fn decode<T: DeserializeOwned>(reply: &str) -> Result<T, DomainError> {
    serde_json::from_str(reply).map_err(|err| {
        DomainError::Storage(format!(
            "the session component answered malformed JSON: {err}"
        ))
    })
}
