//! The host's [`Objects`] port: a pool of agent objects on disk.

use super::{
    calls::{ObjectAnswer, ObjectCall, SnapshotAnswer, SnapshotOp},
    components::Components,
    kv_folder::KvFolder,
    object::{Object, ObjectKind},
    readiness::Readiness,
};
use crate::config::ServeConfig;
use bytes::Bytes;
use stasis_api::{Objects, Snapshots};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    ids::AgentKey,
    snapshot::{PutRequest, SnapshotMeta},
    town::{TownCall, TownReply},
};
use stasis_sqlite::Durability;
use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// Every object this host has opened, by key. Cheap to clone.
#[derive(Clone)]
pub struct HostObjects {
    inner: Arc<Inner>,
}

struct Inner {
    components: Arc<Components>,
    data_dir: PathBuf,
    durability: Durability,
    max_events: u64,
    snapshot_inline_limit: u64,
    kv: Arc<KvFolder>,
    agents: Mutex<HashMap<AgentKey, Arc<Object>>>,
    towns: Mutex<HashMap<String, Arc<Object>>>,
    readiness: Readiness,
}

impl HostObjects {
    /// A pool over the config's data folder: objects under `towns/`, KV
    /// blobs under `kv/`.
    pub fn new(components: Components, config: &ServeConfig) -> Self {
        let kv = KvFolder::new(config.data_dir.join("kv"), config.durability);
        Self {
            inner: Arc::new(Inner {
                components: Arc::new(components),
                data_dir: config.data_dir.clone(),
                durability: config.durability,
                max_events: config.max_events_per_agent,
                snapshot_inline_limit: config.snapshot_inline_limit,
                kv: Arc::new(kv),
                agents: Mutex::new(HashMap::new()),
                towns: Mutex::new(HashMap::new()),
                readiness: Readiness::new(config.data_dir.clone(), config.durability),
            }),
        }
    }

    fn env(&self) -> ObjectEnv {
        ObjectEnv {
            now_ms: self.now_ms(),
            max_events: self.inner.max_events,
        }
    }

    async fn snapshot(
        &self,
        key: &AgentKey,
        op: SnapshotOp,
    ) -> Result<SnapshotAnswer, DomainError> {
        match self
            .agent_object(key)
            .call(&self.inner.components, ObjectCall::Snapshot(op), self.env())
            .await?
        {
            ObjectAnswer::Snapshot(answer) => Ok(answer),
            _ => Err(mismatch()),
        }
    }

    /// The agent's object, created in memory on first use.
    fn agent_object(&self, key: &AgentKey) -> Arc<Object> {
        let mut agents = self
            .inner
            .agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(agents.entry(key.clone()).or_insert_with(|| {
            Arc::new(Object::new(
                ObjectKind::Agent,
                self.agent_path(key),
                self.inner.durability,
                Arc::clone(&self.inner.kv),
            ))
        }))
    }

    /// The town's object, created in memory on first use; its database is
    /// `<data>/towns/<town>/town.sqlite` (town ids are validated ids too).
    fn town_object(&self, town: &str) -> Arc<Object> {
        let mut towns = self
            .inner
            .towns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(towns.entry(town.to_owned()).or_insert_with(|| {
            Arc::new(Object::new(
                ObjectKind::Town,
                self.inner
                    .data_dir
                    .join("towns")
                    .join(town)
                    .join("town.sqlite"),
                self.inner.durability,
                Arc::clone(&self.inner.kv),
            ))
        }))
    }

    /// `<data>/towns/<town>/rigs/<rig>/agents/<agent>/agent.sqlite`. Ids are
    /// validated (no `/`, not `.` or `..`), so each is one path segment.
    fn agent_path(&self, key: &AgentKey) -> PathBuf {
        self.inner
            .data_dir
            .join("towns")
            .join(&key.town)
            .join("rigs")
            .join(&key.rig)
            .join("agents")
            .join(&key.agent)
            .join("agent.sqlite")
    }
}

impl Objects for HostObjects {
    async fn agent(&self, key: &AgentKey, call: AgentCall) -> Result<AgentReply, DomainError> {
        match self
            .agent_object(key)
            .call(&self.inner.components, ObjectCall::Agent(call), self.env())
            .await?
        {
            ObjectAnswer::Agent(reply) => Ok(reply),
            _ => Err(mismatch()),
        }
    }

    async fn town(&self, town: &str, call: TownCall) -> Result<TownReply, DomainError> {
        match self
            .town_object(town)
            .call(&self.inner.components, ObjectCall::Town(call), self.env())
            .await?
        {
            ObjectAnswer::Town(reply) => Ok(reply),
            _ => Err(mismatch()),
        }
    }

    async fn wait_for_events(&self, key: &AgentKey, last_seq: u64, timeout: Duration) {
        let mut seqs = self.agent_object(key).watch_last_seq();
        let _ = tokio::time::timeout(timeout, seqs.wait_for(|seq| *seq > last_seq)).await;
    }

    async fn ready(&self) -> Result<(), DomainError> {
        self.inner.readiness.check().await
    }

    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

impl Snapshots for HostObjects {
    async fn snapshot_put(
        &self,
        key: &AgentKey,
        request: PutRequest,
        body: Bytes,
    ) -> Result<SnapshotMeta, DomainError> {
        match self
            .snapshot(key, SnapshotOp::Put { request, body })
            .await?
        {
            SnapshotAnswer::Stored(meta) => Ok(meta),
            _ => Err(mismatch()),
        }
    }

    async fn snapshot_read(
        &self,
        key: &AgentKey,
        with_bytes: bool,
    ) -> Result<Option<(SnapshotMeta, Option<Bytes>)>, DomainError> {
        match self.snapshot(key, SnapshotOp::Get { with_bytes }).await? {
            SnapshotAnswer::Found(found) => Ok(found),
            _ => Err(mismatch()),
        }
    }

    async fn snapshot_delete(&self, key: &AgentKey) -> Result<(), DomainError> {
        self.snapshot(key, SnapshotOp::Delete).await.map(drop)
    }

    async fn snapshot_wipe(&self, key: &AgentKey) -> Result<(), DomainError> {
        self.snapshot(key, SnapshotOp::Wipe).await.map(drop)
    }

    fn snapshot_inline_limit(&self) -> u64 {
        self.inner.snapshot_inline_limit
    }
}

fn mismatch() -> DomainError {
    DomainError::Storage("an object answered with the wrong kind of reply".into())
}
