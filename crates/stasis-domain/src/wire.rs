//! The one encoding of object calls as they cross a boundary: the host to
//! its `state` component (the WIT `session` and `town` exports carry
//! JSON text) and the edge worker to its Durable Objects.
//!
//! A request is a [`Request`]: the call, and the fence of a container
//! token's write when the object checks it (the edge's objects do; the
//! host checks fences natively, before the component runs). A reply is the
//! object's reply enum; what the boundary does with an error is its own
//! (a WIT `error` variant, or the JSON of [`DomainError`] on the edge).
//! Every encoding or decoding failure is a [`DomainError::Storage`]: what
//! one side wrote, the other could not read, which is corruption.

use crate::{
    DomainError,
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    fence::Fence,
    history::RetentionPolicy,
    sql::SqlStore,
    town::{self, TownCall, TownEnv, TownReply},
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// A call as it travels to its object.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request<C> {
    /// The call.
    pub call: C,
    /// Set for a container token's write that the object checks itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fence: Option<Fence>,
    /// The runtime's retention policy of versions, when the object's side
    /// does not know it itself (the host's `state` component); it replaces
    /// the one in the object's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<RetentionPolicy>,
}

/// Encodes a call (with the fence the object checks, if any).
pub fn encode_request<C: Serialize>(
    call: &C,
    fence: Option<&Fence>,
) -> Result<String, DomainError> {
    #[derive(Serialize)]
    struct Borrowed<'a, C> {
        call: &'a C,
        #[serde(skip_serializing_if = "Option::is_none")]
        fence: Option<&'a Fence>,
    }
    encode(&Borrowed { call, fence })
}

/// Encodes an agent call that carries the runtime's retention policy.
pub fn encode_agent_request(
    call: &AgentCall,
    fence: Option<&Fence>,
    retention: &RetentionPolicy,
) -> Result<String, DomainError> {
    #[derive(Serialize)]
    struct Borrowed<'a> {
        call: &'a AgentCall,
        #[serde(skip_serializing_if = "Option::is_none")]
        fence: Option<&'a Fence>,
        retention: &'a RetentionPolicy,
    }
    encode(&Borrowed {
        call,
        fence,
        retention,
    })
}

/// Encodes a reply, or any other value that crosses with the calls.
pub fn encode<T: Serialize>(value: &T) -> Result<String, DomainError> {
    serde_json::to_string(value)
        .map_err(|err| DomainError::Storage(format!("encoding an object call or reply: {err}")))
}

/// Decodes what the other side of the boundary encoded.
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, DomainError> {
    serde_json::from_str(text).map_err(|err| {
        DomainError::Storage(format!("a malformed object call or reply crossed: {err}"))
    })
}

/// The agent object's side: decodes a request, runs it on `store` (its
/// fence first, in the caller's transaction) and answers the typed reply.
pub fn answer_agent(
    store: &impl SqlStore,
    request: &str,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let request: Request<AgentCall> = decode(request)?;
    let env = ObjectEnv {
        retention: request.retention.unwrap_or(env.retention),
        ..*env
    };
    agent::execute_fenced(store, &request.call, &env, request.fence.as_ref())
}

/// The town object's side: decodes a request, runs it on `store` (its
/// fence first, in the caller's transaction) and answers the typed reply.
pub fn answer_town(
    store: &impl SqlStore,
    request: &str,
    env: &TownEnv,
) -> Result<TownReply, DomainError> {
    let request: Request<TownCall> = decode(request)?;
    town::execute_fenced(store, &request.call, env, request.fence.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_with_and_without_a_fence() {
        let fence = Fence {
            container_id: "c".into(),
            epoch: 3,
        };
        let call = TownCall::GetState;
        let plain: Request<TownCall> = decode(&encode_request(&call, None).unwrap()).unwrap();
        assert_eq!((plain.call, plain.fence), (TownCall::GetState, None));
        let fenced: Request<TownCall> =
            decode(&encode_request(&call, Some(&fence)).unwrap()).unwrap();
        assert_eq!(fenced.fence, Some(fence));
    }

    #[test]
    fn what_cannot_be_read_is_a_storage_error() {
        let err = decode::<Request<TownCall>>("{\"call\":").unwrap_err();
        assert!(matches!(err, DomainError::Storage(_)), "{err:?}");
    }
}
