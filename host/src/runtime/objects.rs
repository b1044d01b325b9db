//! The host's [`Objects`] port: the agent and town objects of a data folder.

use super::{
    components::Components,
    kv::{HostBlobs, KvFolder},
    object::{Object, ObjectKind},
    open_objects::{ObjectKey, OpenObjects},
    readiness::Readiness,
    tidy::Tidier,
};
use crate::{config::ServeConfig, metrics::Metrics};
use bytes::Bytes;
use futures::{Stream, future::Either};
use stasis_api::{
    AfterCommit, AgentSnapshotObject, Objects, Snapshots, summariser::SummariserSettings,
};
use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    fence::Fence,
    ids::AgentKey,
    operation::{agent::AgentOperation, town::TownOperation},
};
use stasis_sqlite::Durability;
use std::{
    path::PathBuf,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// The objects of this host's data folder, opened on demand and closed
/// when idle (see [`OpenObjects`]). Cheap to clone.
#[derive(Clone)]
pub struct HostObjects {
    inner: Arc<Inner>,
    /// Set on the copy serving one container token's write.
    fence: Option<Arc<Fence>>,
}

struct Inner {
    components: Arc<Components>,
    data_dir: PathBuf,
    durability: Durability,
    max_events: u64,
    snapshot_inline_limit: u64,
    snapshot_limit: u64,
    workspace_limit: u64,
    snapshot_pending_ttl_ms: i64,
    snapshot_grace_ms: i64,
    /// When this process started (ms): no collection of an earlier one
    /// still runs, so every claim made before is abandoned.
    started_at_ms: i64,
    liveness_timeout_ms: u64,
    /// How long superseded versions are kept.
    history_retention: stasis_domain::history::RetentionPolicy,
    /// The summariser of omitted turns, if one is configured.
    summariser: Option<SummariserSettings>,
    kv: Arc<KvFolder>,
    open: OpenObjects,
    readiness: Readiness,
    metrics: Arc<Metrics>,
    tidier: Tidier,
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
                snapshot_limit: config.snapshot_limit,
                workspace_limit: config.workspace_limit,
                snapshot_pending_ttl_ms: i64::try_from(config.snapshot_pending_ttl.as_millis())
                    .unwrap_or(i64::MAX),
                snapshot_grace_ms: i64::try_from(config.snapshot_grace.as_millis())
                    .unwrap_or(i64::MAX),
                started_at_ms: wall_clock_ms(),
                liveness_timeout_ms: config.liveness_timeout_secs.saturating_mul(1000),
                history_retention: config.history_retention,
                summariser: config.summariser.clone(),
                kv: Arc::new(kv),
                open: OpenObjects::new(config.objects.clone()),
                readiness: Readiness::new(config.data_dir.clone(), config.durability),
                metrics: Arc::new(Metrics::new()),
                tidier: Tidier::default(),
            }),
            fence: None,
        }
    }

    /// The configured summariser, if any.
    pub(super) fn summariser_settings(&self) -> Option<&SummariserSettings> {
        self.inner.summariser.as_ref()
    }

    /// The data folder.
    pub fn data_dir(&self) -> &std::path::Path {
        &self.inner.data_dir
    }

    /// The host's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    pub(super) fn tidier(&self) -> &Tidier {
        &self.inner.tidier
    }

    /// This pool without a container's fence.
    pub(super) fn unfenced(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            fence: None,
        }
    }

    /// Closes unused objects now and then, for as long as this pool lives.
    /// Needs a Tokio runtime.
    pub fn spawn_idle_closer(&self) {
        let pool = Arc::downgrade(&self.inner);
        let interval = self.inner.open.sweep_interval();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(inner) = pool.upgrade() else { return };
                let closed = inner.open.close_unused();
                if closed > 0 {
                    tracing::debug!(closed, open = inner.open.len(), "closed unused objects");
                }
            }
        });
    }

    fn env(&self) -> ObjectEnv {
        ObjectEnv {
            now_ms: self.now_ms(),
            max_events: self.inner.max_events,
            retention: self.inner.history_retention,
        }
    }

    /// The agent's object, opened on first use.
    fn agent_object(&self, key: &AgentKey) -> Arc<Object> {
        self.inner.open.get(&ObjectKey::Agent(key.clone()), || {
            self.object(ObjectKind::Agent, self.agent_path(key))
        })
    }

    /// The town's object, opened on first use; its database is
    /// `<data>/towns/<town>/town.sqlite` (town ids are validated ids too).
    fn town_object(&self, town: &str) -> Arc<Object> {
        let path = || {
            self.inner
                .data_dir
                .join("towns")
                .join(town)
                .join("town.sqlite")
        };
        self.inner.open.get(&ObjectKey::Town(town.to_owned()), || {
            self.object(ObjectKind::Town, path())
        })
    }

    fn object(&self, kind: ObjectKind, path: PathBuf) -> Object {
        let pool = Arc::downgrade(&self.inner);
        Object::new(
            kind,
            path,
            self.inner.durability,
            Arc::clone(&self.inner.metrics),
        )
        .with_relief(Arc::new(move || {
            pool.upgrade().map_or(0, |inner| inner.open.relieve())
        }))
    }

    /// Descriptors ran out (accepting a connection failed): closes idle
    /// objects, least recently used first, off the async threads.
    pub fn relieve_descriptor_pressure(&self) {
        let pool = Arc::downgrade(&self.inner);
        drop(tokio::task::spawn_blocking(move || {
            if let Some(inner) = pool.upgrade() {
                let closed = inner.open.relieve();
                // Every failed accept lands here: only a relief that freed
                // something is worth a line (accept logs the failures,
                // throttled).
                if closed > 0 {
                    tracing::warn!(closed, "out of descriptors: closed idle objects");
                }
            }
        }));
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
    async fn agent<R: Send + 'static>(
        &self,
        key: &AgentKey,
        op: AgentOperation<R>,
    ) -> Result<R, DomainError> {
        let (call, answer) = op.split();
        let (components, env) = (&self.inner.components, self.env());
        let object = self.agent_object(key);
        answer.read(
            object
                .call(components, call, env, self.fence.clone())
                .await?,
        )
    }

    async fn town<R: Send + 'static>(
        &self,
        town: &str,
        op: TownOperation<R>,
    ) -> Result<R, DomainError> {
        let (call, answer) = op.split();
        let (components, env) = (&self.inner.components, self.env());
        let object = self.town_object(town);
        answer.read(
            object
                .call(components, call, env, self.fence.clone())
                .await?,
        )
    }

    /// The tail holds the object while it waits, so that the object (and
    /// the `last_seq` channel it waits on) stays open.
    async fn wait_for_events(&self, key: &AgentKey, last_seq: u64, timeout: Duration) {
        let object = self.agent_object(key);
        let mut seqs = object.watch_last_seq();
        let _ = tokio::time::timeout(timeout, seqs.wait_for(|seq| *seq > last_seq)).await;
    }

    async fn ready(&self) -> Result<(), DomainError> {
        self.inner.readiness.check().await
    }

    fn liveness_timeout_ms(&self) -> u64 {
        self.inner.liveness_timeout_ms
    }

    fn now_ms(&self) -> i64 {
        wall_clock_ms()
    }

    fn fenced(&self, fence: Fence) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            fence: Some(Arc::new(fence)),
        }
    }
}

impl Snapshots for HostObjects {
    type Object<'a> = AgentSnapshotObject<'a, Self>;
    type Blobs = HostBlobs;

    fn snapshot_object<'a>(&'a self, key: &'a AgentKey) -> Self::Object<'a> {
        AgentSnapshotObject::new(self, key)
    }

    fn snapshot_blobs(&self) -> Result<HostBlobs, DomainError> {
        HostBlobs::open(&self.inner.kv)
    }

    fn snapshot_inline_limit(&self) -> u64 {
        self.inner.snapshot_inline_limit
    }

    fn snapshot_limit(&self) -> u64 {
        self.inner.snapshot_limit
    }

    fn workspace_limit(&self) -> u64 {
        self.inner.workspace_limit
    }

    fn snapshot_pending_ttl_ms(&self) -> i64 {
        self.inner.snapshot_pending_ttl_ms
    }

    /// The collection after the answer: see [`super::tidy`].
    fn snapshot_tidy(&self, key: &AgentKey, after: AfterCommit) -> impl Future<Output = ()> {
        self.tidy(key, after)
    }

    /// Claims of an earlier process are abandoned at once; this process's
    /// own are trusted for the lease.
    fn snapshot_claims_stale_before(&self) -> i64 {
        let leased = self
            .now_ms()
            .saturating_sub(stasis_domain::chunk_store::DEFAULT_CLAIM_LEASE_MS);
        leased.max(self.inner.started_at_ms)
    }

    fn snapshot_grace_ms(&self) -> i64 {
        self.inner.snapshot_grace_ms
    }

    /// Read ahead on a blocking thread while earlier chunks are sent.
    fn snapshot_range(
        &self,
        key: &AgentKey,
        chunks: Vec<String>,
    ) -> impl Stream<Item = Result<Bytes, DomainError>> + use<> {
        let prefix = stasis_domain::chunk_store::key_prefix(key);
        match self.snapshot_blobs() {
            Ok(blobs) => Either::Left(blobs.read_ahead(prefix, chunks)),
            Err(err) => Either::Right(futures::stream::once(std::future::ready(Err(err)))),
        }
    }
}

/// Milliseconds since the epoch.
fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
