//! The port each runtime implements: how a call reaches an object.

use bytes::Bytes;
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    fence::Fence,
    ids::AgentKey,
    snapshot::{PutRequest, SnapshotMeta, StagedSnapshot},
    town::{TownCall, TownReply},
};
use std::{future::Future, time::Duration};

/// Delivers calls to objects. The local host runs them in wasm components
/// over per-object SQLite; the edge worker sends them to Durable Objects.
///
/// Each call is atomic and serialised with every other call on the same
/// object; calls on different objects may run in parallel.
pub trait Objects {
    /// Runs `call` on the agent's object.
    fn agent(
        &self,
        key: &AgentKey,
        call: AgentCall,
    ) -> impl Future<Output = Result<AgentReply, DomainError>>;

    /// Runs `call` on the town's object.
    fn town(
        &self,
        town: &str,
        call: TownCall,
    ) -> impl Future<Output = Result<TownReply, DomainError>>;

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

    /// These objects for one container token's request: every call that
    /// changes an object carries `fence`, and the object checks it in the
    /// call's own transaction before running it (an agent with
    /// `stasis_domain::fence::admit`, a town with
    /// `stasis_domain::town::containers::require_current`; which calls are
    /// checked is `stasis_domain::fence::guards_agent_call` and
    /// `guards_town_call`). Snapshot operations go through the same calls,
    /// so the saga's steps are fenced too.
    fn fenced(&self, fence: Fence) -> Self
    where
        Self: Sized;
}

/// Snapshot operations on an agent. Each runtime runs the domain's snapshot
/// saga (`stasis_domain::snapshot::saga`): the host inside its snapshot
/// component, the edge across the agent's Durable Object and Workers KV.
pub trait Snapshots {
    /// Stores a snapshot.
    fn snapshot_put(
        &self,
        key: &AgentKey,
        request: PutRequest,
        body: Bytes,
    ) -> impl Future<Output = Result<SnapshotMeta, DomainError>>;

    /// The current snapshot, with its verified bytes when `with_bytes`.
    fn snapshot_read(
        &self,
        key: &AgentKey,
        with_bytes: bool,
    ) -> impl Future<Output = Result<Option<(SnapshotMeta, Option<Bytes>)>, DomainError>>;

    /// Deletes the current snapshot and its KV key.
    fn snapshot_delete(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>>;

    /// Removes every snapshot row and KV key of the agent (destroy).
    fn snapshot_wipe(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>>;

    /// Checks and stores a snapshot's bytes under a new version without
    /// making it current: an import stages its snapshot so, and the
    /// import's commit switches to it (`saga::stage`).
    fn snapshot_stage(
        &self,
        key: &AgentKey,
        request: PutRequest,
        body: Bytes,
    ) -> impl Future<Output = Result<StagedSnapshot, DomainError>>;

    /// Deletes the agent's KV keys that no metadata, put in flight or
    /// staged import names (`saga::sweep`).
    fn snapshot_sweep(&self, key: &AgentKey) -> impl Future<Output = Result<(), DomainError>>;

    /// Snapshots up to this many bytes are stored inline.
    fn snapshot_inline_limit(&self) -> u64;
}
