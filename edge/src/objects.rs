//! The worker's [`Objects`] port: calls go to each object's Durable Object.

use serde::de::DeserializeOwned;
use stasis_api::{Objects, settings::StorageSettings, sse::Tail, summariser::SummariserSettings};
use stasis_domain::{
    DomainError,
    fence::Fence,
    ids::AgentKey,
    operation::{agent::AgentOperation, town::TownOperation},
    wire,
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

/// Reaches objects through their Durable Object stubs.
#[derive(Clone)]
pub struct EdgeObjects {
    /// The worker's bindings (the snapshot port reads KV and settings).
    pub(crate) env: Env,
    /// The storage settings, checked when the request arrived.
    pub(crate) storage: StorageSettings,
    /// The summariser of omitted turns, if one is configured.
    pub(crate) summariser: Option<SummariserSettings>,
    /// Set on the copy serving one container token's write.
    fence: Option<Fence>,
}

impl EdgeObjects {
    /// Objects of this worker's environment.
    pub fn new(env: Env, storage: StorageSettings, summariser: Option<SummariserSettings>) -> Self {
        Self {
            env,
            storage,
            summariser,
            fence: None,
        }
    }

    pub(crate) fn agent_stub(&self, key: &AgentKey) -> worker::Result<Stub> {
        self.env
            .durable_object(AGENTS)?
            .id_from_name(&key.object_name())?
            .get_stub()
    }

    fn town_stub(&self, town: &str) -> worker::Result<Stub> {
        self.env
            .durable_object(TOWNS)?
            .id_from_name(town)?
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

/// Sends an encoded request to an object's `/call`; its reply (or the
/// error it answered), decoded.
async fn call_object<Rep: DeserializeOwned>(
    stub: &Stub,
    url: &str,
    body: &str,
    name: &str,
) -> Result<Rep, DomainError> {
    let request = post_json(url, body).map_err(unreachable(name))?;
    let mut response = stub
        .fetch_with_request(request)
        .await
        .map_err(unreachable(name))?;
    let text = response.text().await.map_err(unreachable(name))?;
    wire::decode::<Result<Rep, DomainError>>(&text)?
}

fn unreachable(name: &str) -> impl Fn(worker::Error) -> DomainError + '_ {
    move |err| DomainError::Storage(format!("{name}: {err}"))
}

pub(crate) fn post_json(url: &str, body: &str) -> worker::Result<Request> {
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_body(Some(JsValue::from_str(body)));
    Request::new_with_init(url, &init)
}

impl Objects for EdgeObjects {
    async fn agent<R: Send + 'static>(
        &self,
        key: &AgentKey,
        op: AgentOperation<R>,
    ) -> Result<R, DomainError> {
        let (call, answer) = op.split();
        let body = wire::encode_request(&call, self.fence.as_ref())?;
        let name = format!("agent object {}", key.object_name());
        let stub = self.agent_stub(key).map_err(unreachable(&name))?;
        answer.read(call_object(&stub, "https://agent.stasis/call", &body, &name).await?)
    }

    async fn town<R: Send + 'static>(
        &self,
        town: &str,
        op: TownOperation<R>,
    ) -> Result<R, DomainError> {
        let (call, answer) = op.split();
        let body = wire::encode_request(&call, self.fence.as_ref())?;
        let name = format!("town object {town}");
        let stub = self.town_stub(town).map_err(unreachable(&name))?;
        answer.read(call_object(&stub, "https://town.stasis/call", &body, &name).await?)
    }

    fn liveness_timeout_ms(&self) -> u64 {
        self.storage.liveness_timeout_ms()
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
            summariser: self.summariser.clone(),
            fence: Some(fence),
        }
    }
}
