//! The worker's [`Objects`] port: calls go to each object's Durable Object.

use serde::{Deserialize, Serialize};
use stasis_api::{Objects, settings::StorageSettings, sse::Tail};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    fence::Fence,
    ids::AgentKey,
    town::{TownCall, TownReply},
};
use std::time::Duration;
use wasm_bindgen::JsValue;
use worker::{Env, Method, Request, RequestInit, Response, Stub};

/// The binding of the agent Durable Object class in wrangler.toml.
const AGENTS: &str = "AGENTS";
/// The binding of the town Durable Object class in wrangler.toml.
const TOWNS: &str = "TOWNS";
/// The agent-class Durable Object that readiness probes. Agents are named
/// `<town>/<rig>/<agent>`; this name has no `/`, so it is never an agent's.
const READINESS_OBJECT: &str = "stasis-readiness";

/// What the worker sends an object's `/call`: the call, and the fence of a
/// container token's write, which the object checks in the call's own
/// transaction (`stasis_domain::agent::execute_fenced`,
/// `stasis_domain::town::execute_fenced`).
#[derive(Debug, Serialize, Deserialize)]
pub struct ObjectRequest<C> {
    /// The call.
    pub call: C,
    /// Set for a container token's write.
    #[serde(default)]
    pub fence: Option<Fence>,
}

/// Reaches objects through their Durable Object stubs.
#[derive(Clone)]
pub struct EdgeObjects {
    /// The worker's bindings (the snapshot port reads KV and settings).
    pub(crate) env: Env,
    /// The storage settings, checked when the request arrived.
    pub(crate) storage: StorageSettings,
    /// Set on the copy serving one container token's write.
    fence: Option<Fence>,
}

impl EdgeObjects {
    /// Objects of this worker's environment.
    pub fn new(env: Env, storage: StorageSettings) -> Self {
        Self {
            env,
            storage,
            fence: None,
        }
    }

    fn request<C: Serialize>(&self, call: C) -> Result<String, DomainError> {
        let request = ObjectRequest {
            call,
            fence: self.fence.clone(),
        };
        serde_json::to_string(&request).map_err(|err| DomainError::Storage(err.to_string()))
    }

    pub(crate) fn agent_stub(&self, key: &AgentKey) -> worker::Result<Stub> {
        self.env
            .durable_object(AGENTS)?
            .id_from_name(&key.object_name())?
            .get_stub()
    }

    /// Hands a live tail to the agent's object, which serves the stream.
    pub async fn open_tail(&self, tail: &Tail) -> worker::Result<Response> {
        let request = post_json("https://agent.stasis/tail", &serde_json::to_string(tail)?)?;
        self.agent_stub(&tail.key)?
            .fetch_with_request(request)
            .await
    }
}

pub(crate) fn post_json(url: &str, body: &str) -> worker::Result<Request> {
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(JsValue::from_str(body)));
    Request::new_with_init(url, &init)
}

impl Objects for EdgeObjects {
    async fn agent(&self, key: &AgentKey, call: AgentCall) -> Result<AgentReply, DomainError> {
        let unreachable = |err: worker::Error| {
            DomainError::Storage(format!("agent object {}: {err}", key.object_name()))
        };
        let body = self.request(call)?;
        let request = post_json("https://agent.stasis/call", &body).map_err(unreachable)?;
        let mut response = self
            .agent_stub(key)
            .map_err(unreachable)?
            .fetch_with_request(request)
            .await
            .map_err(unreachable)?;
        response
            .json::<Result<AgentReply, DomainError>>()
            .await
            .map_err(unreachable)?
    }

    async fn town(&self, town: &str, call: TownCall) -> Result<TownReply, DomainError> {
        let unreachable =
            |err: worker::Error| DomainError::Storage(format!("town object {town}: {err}"));
        let body = self.request(call)?;
        let request = post_json("https://town.stasis/call", &body).map_err(unreachable)?;
        let namespace = self.env.durable_object(TOWNS).map_err(unreachable)?;
        let stub = namespace
            .id_from_name(town)
            .and_then(|id| id.get_stub())
            .map_err(unreachable)?;
        let mut response = stub
            .fetch_with_request(request)
            .await
            .map_err(unreachable)?;
        response
            .json::<Result<TownReply, DomainError>>()
            .await
            .map_err(unreachable)?
    }

    /// Tails are served inside the agent's object, which is woken by its own
    /// appends; the worker itself only ever polls.
    async fn wait_for_events(&self, _key: &AgentKey, _last_seq: u64, timeout: Duration) {
        worker::Delay::from(timeout.min(Duration::from_secs(1))).await;
    }

    /// A storage round trip through a Durable Object kept for the probe.
    async fn ready(&self) -> Result<(), DomainError> {
        let unreachable =
            |err: worker::Error| DomainError::Storage(format!("readiness object: {err}"));
        let namespace = self.env.durable_object(AGENTS).map_err(unreachable)?;
        let stub = namespace
            .id_from_name(READINESS_OBJECT)
            .and_then(|id| id.get_stub())
            .map_err(unreachable)?;
        let request = post_json("https://agent.stasis/ready", "{}").map_err(unreachable)?;
        let mut response = stub
            .fetch_with_request(request)
            .await
            .map_err(unreachable)?;
        response
            .json::<Result<(), DomainError>>()
            .await
            .map_err(unreachable)?
    }

    fn now_ms(&self) -> i64 {
        crate::settings::now_ms()
    }

    fn fenced(&self, fence: Fence) -> Self {
        Self {
            env: self.env.clone(),
            storage: self.storage,
            fence: Some(fence),
        }
    }
}
