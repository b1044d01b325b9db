//! Every endpoint of `docs/http-api.md`, the methods it takes, and the
//! answers (status and error code) the contract documents for each.

/// An endpoint of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `GET /healthz`
    Health,
    /// `/api/towns/{town}`
    Town,
    /// `/container-eviction`
    Eviction,
    /// `/heartbeat`
    Heartbeat,
    /// `/container-registry`
    Registry,
    /// the town's `/events`
    TownEvents,
    /// the town's `/agents`
    TownAgents,
    /// `/mayor/message`
    MayorMessage,
    /// `/rigs/{rig}/agents/{agent}`
    Agent,
    /// the agent's `/events`
    Events,
    /// `/sessions`
    Sessions,
    /// `/sessions/{session}`
    Session,
    /// `/conversation`
    Conversation,
    /// `/checkpoint`
    Checkpoint,
    /// `/memory`
    Memory,
    /// `/memory/{key}`
    MemoryEntry,
    /// `/db-snapshot`
    Snapshot,
    /// `/export`
    Export,
    /// `/import`
    Import,
    /// `/dispatch`
    Dispatch,
}

/// Every route, for drawing one at random.
pub const ROUTES: [Route; 20] = [
    Route::Health,
    Route::Town,
    Route::Eviction,
    Route::Heartbeat,
    Route::Registry,
    Route::TownEvents,
    Route::TownAgents,
    Route::MayorMessage,
    Route::Agent,
    Route::Events,
    Route::Sessions,
    Route::Session,
    Route::Conversation,
    Route::Checkpoint,
    Route::Memory,
    Route::MemoryEntry,
    Route::Snapshot,
    Route::Export,
    Route::Import,
    Route::Dispatch,
];

/// A documented answer: a status and, for an error, its code (`""` for a
/// success).
pub type Answer = (u16, &'static str);

/// Errors any endpoint may answer, from the checks every request passes.
pub const GENERIC: &[Answer] = &[
    (400, "invalid_id"),
    (400, "invalid_json"),
    (400, "invalid_request"),
    (401, "unauthorized"),
    (403, "forbidden"),
    (404, "not_found"),
    (405, "method_not_allowed"),
    (413, "body_too_large"),
    (415, "unsupported_media_type"),
];

/// The error codes of each status, as the table in `docs/http-api.md`
/// lists them.
pub const CODES: &[Answer] = &[
    (400, "invalid_id"),
    (400, "invalid_json"),
    (400, "invalid_request"),
    (400, "sha256_mismatch"),
    (400, "invalid_manifest"),
    (401, "unauthorized"),
    (403, "forbidden"),
    (404, "not_found"),
    (404, "agent_not_found"),
    (404, "session_not_found"),
    (404, "checkpoint_not_found"),
    (404, "memory_not_found"),
    (404, "snapshot_not_found"),
    (404, "mayor_not_found"),
    (405, "method_not_allowed"),
    (409, "producer_seq_stale"),
    (409, "mayor_exists"),
    (409, "no_current_container"),
    (410, "cursor_expired"),
    (412, "precondition_failed"),
    (413, "event_too_large"),
    (413, "batch_too_large"),
    (413, "body_too_large"),
    (413, "snapshot_too_large"),
    (413, "checkpoint_too_large"),
    (413, "memory_value_too_large"),
    (413, "metadata_too_large"),
    (413, "message_too_large"),
    (413, "registry_too_large"),
    (415, "unsupported_media_type"),
    (500, "internal_error"),
    (500, "snapshot_corrupt"),
    (503, "snapshot_propagating"),
    (503, "town_draining"),
    (503, "not_configured"),
];

impl Route {
    /// True for the routes under `/rigs/{rig}/agents/{agent}`.
    pub fn is_agent(self) -> bool {
        !matches!(
            self,
            Route::Health
                | Route::Town
                | Route::Eviction
                | Route::Heartbeat
                | Route::Registry
                | Route::TownEvents
                | Route::TownAgents
                | Route::MayorMessage
        )
    }

    /// The methods the route takes (`HEAD` goes wherever `GET` does).
    pub fn methods(self) -> &'static [&'static str] {
        match self {
            Route::Health
            | Route::Town
            | Route::TownEvents
            | Route::TownAgents
            | Route::Sessions
            | Route::Conversation
            | Route::Memory
            | Route::Export => &["GET", "HEAD"],
            Route::Eviction | Route::Heartbeat | Route::MayorMessage | Route::Dispatch => &["POST"],
            Route::Registry => &["GET", "HEAD", "PUT"],
            Route::Agent | Route::Session | Route::Checkpoint | Route::MemoryEntry => {
                &["GET", "HEAD", "PUT", "DELETE"]
            }
            Route::Events => &["GET", "HEAD", "POST"],
            Route::Snapshot => &["GET", "HEAD", "PUT", "POST", "DELETE"],
            Route::Import => &["PUT"],
        }
    }

    /// The path after the town's or the agent's (`id` fills a session or
    /// memory key segment).
    pub fn suffix(self, id: &str) -> String {
        let fixed = match self {
            Route::Health | Route::Town | Route::Agent => "",
            Route::Eviction => "/container-eviction",
            Route::Heartbeat => "/heartbeat",
            Route::Registry => "/container-registry",
            Route::TownEvents | Route::Events => "/events",
            Route::TownAgents => "/agents",
            Route::MayorMessage => "/mayor/message",
            Route::Sessions => "/sessions",
            Route::Session => return format!("/sessions/{id}"),
            Route::Conversation => "/conversation",
            Route::Checkpoint => "/checkpoint",
            Route::Memory => "/memory",
            Route::MemoryEntry => return format!("/memory/{id}"),
            Route::Snapshot => "/db-snapshot",
            Route::Export => "/export",
            Route::Import => "/import",
            Route::Dispatch => "/dispatch",
        };
        fixed.to_owned()
    }

    /// True when the body must be a JSON object (checkpoints and memory take
    /// any JSON value, snapshots bytes).
    pub fn takes_object(self) -> bool {
        !matches!(
            self,
            Route::Checkpoint | Route::MemoryEntry | Route::Snapshot
        )
    }

    /// What the contract documents for `method` here, besides [`GENERIC`].
    pub fn answers(self, method: &str) -> &'static [Answer] {
        let read = matches!(method, "GET" | "HEAD");
        match (self, read) {
            (Route::Health | Route::Town | Route::TownAgents, _) => &[(200, "")],
            (Route::Sessions | Route::Memory | Route::Export | Route::Conversation, _) => {
                &[(200, "")]
            }
            (Route::Eviction, _) => &[(202, ""), (409, "no_current_container")],
            (Route::Heartbeat, _) => &[(200, "")],
            (Route::Registry, _) => &[(200, ""), (413, "registry_too_large")],
            (Route::TownEvents, _) => &[(200, ""), (410, "cursor_expired")],
            (Route::MayorMessage, _) => &[
                (200, ""),
                (202, ""),
                (404, "mayor_not_found"),
                (413, "message_too_large"),
            ],
            (Route::Import, _) => &[(200, ""), (400, "invalid_manifest")],
            (Route::Dispatch, _) => &[(200, ""), (404, "agent_not_found"), (503, "town_draining")],
            (Route::Events, true) => &[(200, ""), (410, "cursor_expired")],
            (Route::Events, false) => &[
                (200, ""),
                (409, "producer_seq_stale"),
                (413, "event_too_large"),
                (413, "batch_too_large"),
            ],
            (Route::Snapshot, true) => &[
                (200, ""),
                (304, ""),
                (404, "snapshot_not_found"),
                (503, "snapshot_propagating"),
            ],
            (Route::Snapshot, false) => snapshot_writes(method),
            (Route::Agent, _) => crud(
                method,
                &[(200, ""), (404, "agent_not_found")],
                &[
                    (200, ""),
                    (201, ""),
                    (409, "mayor_exists"),
                    (413, "metadata_too_large"),
                ],
                &[(204, ""), (404, "agent_not_found")],
            ),
            (Route::Session, _) => crud(
                method,
                &[(200, ""), (404, "session_not_found")],
                &[(200, ""), (413, "metadata_too_large")],
                &[(204, ""), (404, "session_not_found")],
            ),
            (Route::Checkpoint, _) => crud(
                method,
                &[(200, ""), (404, "checkpoint_not_found")],
                &[(200, ""), (413, "checkpoint_too_large")],
                &[(204, ""), (404, "checkpoint_not_found")],
            ),
            (Route::MemoryEntry, _) => crud(
                method,
                &[(200, ""), (404, "memory_not_found")],
                &[(200, ""), (413, "memory_value_too_large")],
                &[(204, ""), (404, "memory_not_found")],
            ),
        }
    }
}

fn snapshot_writes(method: &str) -> &'static [Answer] {
    if method == "DELETE" {
        return &[(204, ""), (404, "snapshot_not_found")];
    }
    &[
        (201, ""),
        (400, "sha256_mismatch"),
        (412, "precondition_failed"),
        (413, "snapshot_too_large"),
    ]
}

/// The answers of a route that takes `GET`, `PUT` and `DELETE`.
fn crud(
    method: &str,
    get: &'static [Answer],
    put: &'static [Answer],
    delete: &'static [Answer],
) -> &'static [Answer] {
    match method {
        "PUT" => put,
        "DELETE" => delete,
        _ => get,
    }
}
