//! Snapshots on the edge: the domain's snapshot saga, run in the worker,
//! with the agent's Durable Object as its object and Workers KV as its blob
//! store. The bytes go from the worker to KV directly; only inline
//! snapshots travel to the Durable Object.

use crate::objects::{EdgeObjects, post_json};
use bytes::Bytes;
use futures::{Stream, TryStreamExt as _};
use js_sys::{Function, Promise, Reflect, Uint8Array};
use serde::{Deserialize, Serialize};
use stasis_api::{AgentSnapshotObject, Snapshots};
use stasis_domain::{
    DomainError,
    chunk_store::{self, ports::BlobStore},
    ids::AgentKey,
    snapshot::ranges::RANGE_CHUNKS,
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

    /// A batch upload's keys, written concurrently (one KV operation each).
    async fn put_many(&self, values: Vec<(String, Vec<u8>)>) -> Result<(), DomainError> {
        let writes = values.iter().map(|(key, value)| self.put(key, value));
        futures::future::try_join_all(writes).await.map(drop)
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
            Err(_) => chunk_store::sha256_hex(bytes),
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

impl Snapshots for EdgeObjects {
    type Object<'a> = AgentSnapshotObject<'a, Self>;
    type Blobs = WorkersKv;

    fn snapshot_object<'a>(&'a self, key: &'a AgentKey) -> Self::Object<'a> {
        AgentSnapshotObject::new(self, key)
    }

    fn snapshot_blobs(&self) -> Result<WorkersKv, DomainError> {
        WorkersKv::open(&self.env)
    }

    fn snapshot_inline_limit(&self) -> u64 {
        self.storage.snapshot_inline_limit
    }

    fn snapshot_limit(&self) -> u64 {
        self.storage.snapshot_limit
    }

    fn workspace_limit(&self) -> u64 {
        self.storage.workspace_limit
    }

    fn snapshot_grace_ms(&self) -> i64 {
        i64::try_from(self.storage.snapshot_grace_ms).unwrap_or(i64::MAX)
    }

    /// Workers KV allows 1,000 operations per invocation.
    fn snapshot_range_chunks(&self) -> Option<usize> {
        Some(RANGE_CHUNKS)
    }

    /// The range is read by the agent's Durable Object: each request to it
    /// is an invocation of its own, with its own KV budget. Its answer
    /// streams, so neither side holds the range whole.
    fn snapshot_range(
        &self,
        key: &AgentKey,
        chunks: Vec<String>,
    ) -> impl Stream<Item = Result<Bytes, DomainError>> + use<> {
        let object = key.object_name();
        let unreachable =
            move |err: worker::Error| DomainError::Storage(format!("agent object {object}: {err}"));
        let range = ChunkRange {
            key_prefix: chunk_store::key_prefix(key),
            chunks,
        };
        let stub = self.agent_stub(key);
        let opened = async move {
            let body = serde_json::to_string(&range)?;
            let request = post_json("https://agent.stasis/chunks", &body)?;
            let mut response = stub?.fetch_with_request(request).await?;
            if response.status_code() != 200 {
                let status = response.status_code();
                let text = response.text().await.unwrap_or_default();
                return Err(worker::Error::RustError(format!(
                    "reading chunks answered {status}: {text}"
                )));
            }
            response.stream()
        };
        futures::stream::once(opened)
            .map_ok(|bytes| bytes.map_ok(Bytes::from))
            .try_flatten()
            .map_err(unreachable)
    }
}

/// What the worker asks the agent's object for: chunks of the agent's
/// store, in order (at most `RANGE_CHUNKS`).
#[derive(Debug, Serialize, Deserialize)]
pub struct ChunkRange {
    /// The agent's KV key prefix.
    pub key_prefix: String,
    /// The chunks' sha256s.
    pub chunks: Vec<String>,
}
