//! The port each runtime implements: how a call reaches an object.

use crate::Summariser;
use bytes::Bytes;
use futures::{Stream, future::Either};
use stasis_domain::{
    DomainError,
    chunk_store::{
        self,
        operations::ChunkOperation,
        ports::{BlobStore, ChunkObject},
    },
    fence::Fence,
    ids::AgentKey,
    operation::{
        agent::{self as agent_op, AgentOperation},
        snapshot::{SnapshotOperation, chunk_step},
        town::TownOperation,
    },
    snapshot::{SnapshotMeta, chunk_saga, ports::SnapshotObject, saga, whole::WholeReader},
    workspace::DEFAULT_WORKSPACE_LIMIT,
    workspace_store::{operations::WorkspaceOperation, ports::WorkspaceObject},
};
use std::{future::Future, time::Duration};

/// Delivers calls to objects. The local host runs them in wasm components
/// over per-object SQLite; the edge worker sends them to Durable Objects.
///
/// Each call is atomic and serialised with every other call on the same
/// object; calls on different objects may run in parallel. A runtime's
/// objects also carry its summariser ([`Summariser`]): every handler that
/// rebuilds a conversation reaches both through one value.
pub trait Objects: Summariser {
    /// Runs `op` on the agent's object; its reply, read as the operation
    /// says (a reply that does not fit is a storage error).
    fn agent<R: Send + 'static>(
        &self,
        key: &AgentKey,
        op: AgentOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>>;

    /// Runs `op` on the town's object.
    fn town<R: Send + 'static>(
        &self,
        town: &str,
        op: TownOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>>;

    /// Resolves when the agent's log may hold events past `last_seq`, or when
    /// `timeout` has passed, whichever comes first. Spurious wake-ups are
    /// fine: the caller reads again.
    fn wait_for_events(
        &self,
        key: &AgentKey,
        last_seq: u64,
        timeout: Duration,
    ) -> impl Future<Output = ()>;

    /// Readiness: whether the runtime's storage takes a small durable write
    /// now (`GET /healthz`). It must be cheap, since load balancers ask
    /// every few seconds, and must change no object's state. The error's
    /// detail goes to the server's log only.
    fn ready(&self) -> impl Future<Output = Result<(), DomainError>>;

    /// The runtime's clock, in ms since the epoch (wasm32 targets have no
    /// portable clock, so the runtime supplies it).
    fn now_ms(&self) -> i64;

    /// How long a town's current container counts as alive after its
    /// newest heartbeat, in ms (the runtime's setting; see
    /// [`crate::settings::StorageSettings::liveness_timeout_secs`]).
    fn liveness_timeout_ms(&self) -> u64 {
        stasis_domain::town::DEFAULT_LIVENESS_TIMEOUT_MS
    }

    /// These objects for one container token's request: every call that
    /// changes an object carries `fence`, and the object checks it in the
    /// call's own transaction before running it (an agent with
    /// `stasis_domain::fence::admit`, a town with
    /// `stasis_domain::town::containers::require_current`; which calls are
    /// checked is `stasis_domain::agent::guards_agent_call` and
    /// `stasis_domain::town::guards_town_call`). Snapshot steps are agent calls too
    /// (`operation::agent::snapshot`), so every write step of the sagas (chunk
    /// records, manifest commits, `missing`, collection) is fenced.
    fn fenced(&self, fence: Fence) -> Self
    where
        Self: Sized;
}

/// Snapshot operations on an agent. Each runtime gives the domain's
/// snapshot and chunk sagas (`stasis_domain::snapshot::{saga, chunk_saga,
/// whole}`, `stasis_domain::chunk_store::saga`)
/// their two ports: the agent's object (the host's state component, the
/// edge's Durable Object) and the KV store (the host's KV folder, Workers
/// KV). The sagas run in the runtime's own process, so bytes never cross
/// into a guest and are hashed natively (the host's `sha2` with the CPU's
/// SHA extensions, the edge's WebCrypto).
pub trait Snapshots: Objects {
    /// The agent's object as the sagas reach it (kilo.db's and the
    /// workspace's).
    type Object<'a>: SnapshotObject + WorkspaceObject
    where
        Self: 'a;
    /// The KV store.
    type Blobs: BlobStore;

    /// The agent's object.
    fn snapshot_object<'a>(&'a self, key: &'a AgentKey) -> Self::Object<'a>;

    /// The KV store.
    fn snapshot_blobs(&self) -> Result<Self::Blobs, DomainError>;

    /// Snapshots up to this many bytes are stored inline.
    fn snapshot_inline_limit(&self) -> u64;

    /// The largest snapshot accepted.
    fn snapshot_limit(&self) -> u64;

    /// The largest workspace accepted, in bytes of files.
    fn workspace_limit(&self) -> u64 {
        DEFAULT_WORKSPACE_LIMIT
    }

    /// How long uploaded chunks no manifest names are kept (ms): an upload
    /// in progress.
    fn snapshot_pending_ttl_ms(&self) -> i64 {
        chunk_store::PENDING_CHUNK_TTL_MS
    }

    /// The most chunks one invocation may read: a whole-file read of more
    /// goes range by range through [`Self::snapshot_range`]. `None` (the
    /// default): no such budget, the file is read in this invocation, its
    /// chunks after the first as one range.
    fn snapshot_range_chunks(&self) -> Option<usize> {
        None
    }

    /// Reads `chunks` of the agent's store, each verified, in order. The
    /// default reads them here; the edge reads them in a fresh invocation
    /// (a request to the agent's Durable Object) with its own KV budget;
    /// the host reads ahead on a blocking thread.
    fn snapshot_range(
        &self,
        key: &AgentKey,
        chunks: Vec<String>,
    ) -> impl Stream<Item = Result<Bytes, DomainError>> + use<Self> {
        let prefix = chunk_store::key_prefix(key);
        match self.snapshot_blobs() {
            Ok(blobs) => Either::Left(crate::snapshot_ranges::read_chunks(blobs, prefix, chunks)),
            Err(err) => Either::Right(futures::stream::once(std::future::ready(Err(err)))),
        }
    }

    /// Claims on chunks that collections made before this (ms since the
    /// epoch) were abandoned: their collection died, and the next upload or
    /// collection takes them over (`stasis_domain::chunk_store::claims`).
    /// The default trusts a claim for [`chunk_store::DEFAULT_CLAIM_LEASE_MS`];
    /// the host also knows that no collection of an earlier process runs.
    fn snapshot_claims_stale_before(&self) -> i64 {
        self.now_ms()
            .saturating_sub(chunk_store::DEFAULT_CLAIM_LEASE_MS)
    }

    /// How long a superseded or deleted version's chunks stay readable
    /// (ms), so that its readers are not cut.
    fn snapshot_grace_ms(&self) -> i64 {
        chunk_store::DEFAULT_CHUNK_GRACE_MS
    }

    /// The current snapshot, with its verified bytes when `with_bytes`
    /// (read whole: an export's).
    fn snapshot_read(
        &self,
        key: &AgentKey,
        with_bytes: bool,
    ) -> impl Future<Output = Result<Option<(SnapshotMeta, Option<Bytes>)>, DomainError>> {
        async move {
            let object = self.snapshot_object(key);
            let Some(plan) = chunk_saga::plan(&object, with_bytes).await? else {
                return Ok(None);
            };
            if !with_bytes {
                return Ok(Some((plan.meta, None)));
            }
            let meta = plan.meta.clone();
            let reader = WholeReader::new(plan, chunk_store::key_prefix(key));
            let bytes = reader.read_all(&self.snapshot_blobs()?).await?;
            Ok(Some((meta, Some(Bytes::from(bytes)))))
        }
    }

    /// Deletes the current snapshot; its chunks are collected after.
    fn snapshot_delete(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            let blobs = self.snapshot_blobs()?;
            let aging = saga::Aging {
                grace_ms: self.snapshot_grace_ms(),
                stale_before: self.snapshot_claims_stale_before(),
            };
            saga::delete(
                &self.snapshot_object(key),
                &blobs,
                &chunk_store::key_prefix(key),
                aging,
            )
            .await
        }
    }

    /// Removes every snapshot row and KV key of the agent (destroy).
    fn snapshot_wipe(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            let blobs = self.snapshot_blobs()?;
            let prefix = chunk_store::key_prefix(key);
            let stale_before = self.snapshot_claims_stale_before();
            saga::wipe(
                &self.snapshot_object(key),
                &blobs,
                &prefix,
                stale_before,
                WIPE_STEPS,
            )
            .await
        }
    }

    /// What follows a stored snapshot (see [`AfterCommit`]). Its failures
    /// leave garbage for a later pass, never a name without its chunk, so
    /// nothing is reported. The default runs it before the answer (the
    /// edge: a Worker's work ends with its answer); the host runs it after.
    fn snapshot_tidy(&self, key: &AgentKey, after: AfterCommit) -> impl Future<Output = ()> {
        async move {
            let Ok(blobs) = self.snapshot_blobs() else {
                return;
            };
            let (object, prefix) = (self.snapshot_object(key), chunk_store::key_prefix(key));
            let stale_before = self.snapshot_claims_stale_before();
            let _ = match after {
                AfterCommit::Collect => {
                    chunk_store::saga::collect(&object, &blobs, &prefix, stale_before).await
                }
                AfterCommit::Sweep => saga::sweep(&object, &blobs, &prefix, stale_before)
                    .await
                    .map(u64::from),
            };
        }
    }

    /// Deletes the agent's KV keys that no metadata, put in flight or
    /// staged import names, and collects unreferenced chunks
    /// (`saga::sweep`).
    fn snapshot_sweep(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            let blobs = self.snapshot_blobs()?;
            let prefix = chunk_store::key_prefix(key);
            let stale_before = self.snapshot_claims_stale_before();
            saga::sweep(&self.snapshot_object(key), &blobs, &prefix, stale_before)
                .await
                .map(drop)
        }
    }
}

/// The housekeeping a stored snapshot leaves ([`Snapshots::snapshot_tidy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterCommit {
    /// A manifest commit: one collection step takes the chunks only the
    /// superseded manifest named.
    Collect,
    /// A whole-file PUT: the same, and a listing sweep deletes KV keys a
    /// crash left without a row (`saga::sweep`).
    Sweep,
}

/// Collection steps a destroy runs at once (each up to
/// `chunk_store::COLLECT_BATCH` chunks); later sweeps take the rest.
const WIPE_STEPS: u32 = 4;

/// The agent's object as the snapshot sagas reach it, in any runtime: each
/// step is an agent call through [`Objects::agent`].
pub struct AgentSnapshotObject<'a, O> {
    objects: &'a O,
    key: &'a AgentKey,
}

impl<'a, O> AgentSnapshotObject<'a, O> {
    /// The agent `key` of `objects`.
    pub fn new(objects: &'a O, key: &'a AgentKey) -> Self {
        Self { objects, key }
    }
}

impl<O: Objects> ChunkObject for AgentSnapshotObject<'_, O> {
    fn run_chunk<R: Send + 'static>(
        &self,
        step: ChunkOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>> {
        self.objects
            .agent(self.key, agent_op::snapshot(chunk_step(step)))
    }
}

impl<O: Objects> WorkspaceObject for AgentSnapshotObject<'_, O> {
    fn run_workspace<R: Send + 'static>(
        &self,
        step: WorkspaceOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>> {
        self.objects.agent(self.key, agent_op::workspace(step))
    }
}

impl<O: Objects> SnapshotObject for AgentSnapshotObject<'_, O> {
    fn run<R: Send + 'static>(
        &self,
        step: SnapshotOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>> {
        self.objects.agent(self.key, agent_op::snapshot(step))
    }
}
