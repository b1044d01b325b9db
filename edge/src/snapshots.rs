//! Snapshots on the edge: the domain's snapshot saga, run in the worker,
//! with the agent's Durable Object as its object and Workers KV as its blob
//! store. The bytes go from the worker to KV directly; only inline
//! snapshots travel to the Durable Object.

use crate::objects::EdgeObjects;
use js_sys::{Function, Promise, Reflect, Uint8Array};
use stasis_api::Objects;
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    ids::AgentKey,
    snapshot::{
        self, SnapshotCall, SnapshotReply,
        saga::{BlobStore, SnapshotObject},
    },
};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use worker::{Env, kv::KvStore};

/// The KV namespace binding in wrangler.toml.
const SNAPSHOTS_KV: &str = "AGENT_DB_SNAPSHOTS_KV";

/// Workers KV: writes are visible in their own location within seconds,
/// elsewhere within about a minute; a reader retries for a few seconds
/// before answering 503 `snapshot_propagating`.
const PROPAGATION_DELAYS_MS: &[u64] = &[250, 500, 1_000, 2_000];

/// The agent's Durable Object, as the saga's object.
pub struct AgentStub<'a> {
    /// The worker's objects.
    pub objects: &'a EdgeObjects,
    /// Which agent.
    pub key: &'a AgentKey,
}

impl SnapshotObject for AgentStub<'_> {
    async fn call(&self, call: SnapshotCall) -> Result<SnapshotReply, DomainError> {
        match self
            .objects
            .agent(self.key, AgentCall::Snapshot(call))
            .await?
        {
            AgentReply::Snapshot(reply) => Ok(reply),
            other => Err(DomainError::Storage(format!(
                "the agent object answered a snapshot step with {other:?}"
            ))),
        }
    }
}

/// The snapshot namespace, as the saga's blob store.
pub struct WorkersKv(KvStore);

impl WorkersKv {
    /// The namespace bound in this environment.
    pub fn open(env: &Env) -> Result<Self, DomainError> {
        env.kv(SNAPSHOTS_KV)
            .map(Self)
            .map_err(|err| DomainError::Storage(format!("KV binding {SNAPSHOTS_KV}: {err}")))
    }
}

fn kv_error(err: worker::kv::KvError) -> DomainError {
    DomainError::Storage(format!("Workers KV: {err}"))
}

impl BlobStore for WorkersKv {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        self.0
            .put_bytes(key, value)
            .map_err(kv_error)?
            .execute()
            .await
            .map_err(kv_error)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        self.0.get(key).bytes().await.map_err(kv_error)
    }

    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        self.0.delete(key).await.map_err(kv_error)
    }

    async fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        let mut list = self.0.list().prefix(prefix.to_owned());
        if let Some(cursor) = cursor {
            list = list.cursor(cursor);
        }
        let page = list.execute().await.map_err(kv_error)?;
        let next = if page.list_complete {
            None
        } else {
            page.cursor
        };
        Ok((page.keys.into_iter().map(|k| k.name).collect(), next))
    }

    fn propagation_delays_ms(&self) -> &[u64] {
        PROPAGATION_DELAYS_MS
    }

    async fn pause(&self, ms: u64) {
        worker::Delay::from(Duration::from_millis(ms)).await;
    }

    /// WebCrypto hashes natively, about three times faster than sha256
    /// compiled to wasm; the portable digest stays as the fallback.
    async fn sha256_hex(&self, bytes: &[u8]) -> String {
        match web_crypto_sha256(bytes).await {
            Ok(hex) => hex,
            Err(_) => snapshot::sha256_hex(bytes),
        }
    }
}

/// `crypto.subtle.digest("SHA-256", bytes)`, as lowercase hex.
async fn web_crypto_sha256(bytes: &[u8]) -> Result<String, JsValue> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto"))?;
    let subtle = Reflect::get(&crypto, &JsValue::from_str("subtle"))?;
    let digest: Function = Reflect::get(&subtle, &JsValue::from_str("digest"))?.dyn_into()?;
    let data = Uint8Array::from(bytes);
    let promise: Promise = digest
        .call2(&subtle, &JsValue::from_str("SHA-256"), &data)?
        .dyn_into()?;
    let buffer = JsFuture::from(promise).await?;
    let hash = Uint8Array::new(&buffer).to_vec();
    Ok(hash.iter().map(|b| format!("{b:02x}")).collect())
}
