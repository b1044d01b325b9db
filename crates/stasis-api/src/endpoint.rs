//! What a request names once resolved: an endpoint, with the ids its path
//! carries, and what that endpoint's methods may do (write, be fenced).
//! [`crate::route`] resolves a path to one; [`crate::table`] lists them.

use http::Method;
use stasis_domain::ids::AgentKey;

/// An endpoint, with the ids its path carries (already validated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /healthz`: readiness (storage writable).
    Health,
    /// `GET /livez`: liveness (the process answers; storage untouched).
    Live,
    /// `GET /metrics`: the runtime's metrics (Prometheus text on the host).
    Metrics,
    /// `GET /openapi.json`: the API's OpenAPI document.
    OpenApi,
    /// `POST /api/token/refresh`: a fresh token like the one presented.
    RefreshToken,
    /// `GET /ui...`: the operator page's files.
    Ui(crate::ui::Asset),
    /// `/api/towns/{town}...`
    Town(String, TownEndpoint),
    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}...`
    Agent(AgentKey, AgentEndpoint),
}

/// What lies under `/api/towns/{town}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TownEndpoint {
    /// `` (the town itself)
    State,
    /// `/container-eviction`
    Eviction,
    /// `/heartbeat`
    Heartbeat,
    /// `/container-registry`
    Registry,
    /// `/events`
    Events,
    /// `/agents`
    Agents,
    /// `/mayor/message`
    MayorMessage,
    /// `/container-token`: a container token for one container.
    ContainerToken,
}

/// What lies under `/api/towns/{town}/rigs/{rig}/agents/{agent}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentEndpoint {
    /// `` (the agent's record)
    Record,
    /// `/events`
    Events,
    /// `/sessions`
    Sessions,
    /// `/sessions/{session}`
    Session(String),
    /// `/conversation`
    Conversation,
    /// `/checkpoint`
    Checkpoint,
    /// `/memory`
    Memory,
    /// `/memory/{key}`
    MemoryEntry(String),
    /// `/db-snapshot`
    Snapshot,
    /// `/db-snapshot/missing`
    SnapshotMissing,
    /// `/db-snapshot/chunks/{sha256}`
    SnapshotChunk(String),
    /// `/db-snapshot/manifest`
    SnapshotManifest,
    /// `/workspace`
    Workspace,
    /// `/workspace/missing`
    WorkspaceMissing,
    /// `/workspace/chunks/{sha256}`
    WorkspaceChunk(String),
    /// `/workspace/manifest`
    WorkspaceManifest,
    /// `/workspace/batch/upload`: many chunks in one framed body.
    WorkspaceBatchUpload,
    /// `/workspace/batch/fetch`: many chunks in one framed reply.
    WorkspaceBatchFetch,
    /// `/history`: the versions of one kind.
    History,
    /// `/history/pins`
    HistoryPins,
    /// `/history/pins/{pin}`
    HistoryPin(String),
    /// `/fork`: a new agent from this one's state at a point.
    Fork,
    /// `/restore`: restore in place to a point or a pin.
    Restore,
    /// `/export`
    Export,
    /// `/import`
    Import,
    /// `/dispatch`
    Dispatch,
    /// `/inbox`: a message for the agent, persisted and routed.
    Inbox,
    /// `/api/towns/{town}/container-registry/agents/{rig}/{agent}`: the
    /// agent's entry in the town's process registry (a town object call;
    /// the path names one agent, so it resolves like the agent's routes).
    RegistryEntry,
}

impl Endpoint {
    /// The town whose scope this endpoint needs, if any.
    pub fn town(&self) -> Option<&str> {
        match self {
            Endpoint::Health
            | Endpoint::Live
            | Endpoint::Metrics
            | Endpoint::OpenApi
            | Endpoint::RefreshToken
            | Endpoint::Ui(_) => None,
            Endpoint::Town(town, _) => Some(town),
            Endpoint::Agent(key, _) => Some(&key.town),
        }
    }

    /// Whether `method` on this endpoint may change what the server
    /// stores. A batch fetch changes nothing. Minting a token changes nothing, so a read-only token may
    /// exchange and refresh itself (into read-only tokens).
    pub fn is_write(&self, method: &Method) -> bool {
        let token_route = matches!(
            self,
            Endpoint::RefreshToken | Endpoint::Town(_, TownEndpoint::ContainerToken)
        );
        // A batch fetch is a read whose list of names travels as a body.
        let batch_read = matches!(self, Endpoint::Agent(_, AgentEndpoint::WorkspaceBatchFetch));
        !(token_route || batch_read || *method == Method::GET || *method == Method::HEAD)
    }

    /// Whether `method` here is a write a container token's fence guards:
    /// every write but a heartbeat (a superseded container's heartbeat is
    /// answered, not refused).
    pub fn is_fenced(&self, method: &Method) -> bool {
        let heartbeat = matches!(self, Endpoint::Town(_, TownEndpoint::Heartbeat));
        !heartbeat && self.is_write(method)
    }
}
