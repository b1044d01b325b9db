//! The routes of one agent: record, event log, sessions, checkpoint,
//! memory, conversation, export, import and dispatch.

use super::{Answer, Body, Operation, Params, Route, schema, schemas};
use crate::{
    agent_http,
    endpoint::{AgentEndpoint, Endpoint},
    mayor_http,
};
use http::Method;
use stasis_domain::{
    agent_state::{ImportSummary, Manifest},
    conversation::PriorConversation,
    event_log::AppendOutcome,
};

/// The agent's path: `/api/towns/{town}/rigs/{rig}/agents/{agent}`.
pub(super) fn agent(params: &Params<'_>, endpoint: AgentEndpoint) -> Endpoint {
    Endpoint::Agent(
        stasis_domain::ids::AgentKey {
            town: params.get("town"),
            rig: params.get("rig"),
            agent: params.get("agent"),
        },
        endpoint,
    )
}

/// A JSON answer with no headers of note.
pub(super) const fn json(status: u16, description: &'static str, body: Body) -> Answer {
    Answer {
        status,
        description,
        body,
        headers: &[],
    }
}

/// An operation with no body, query or headers of note.
pub(super) const fn read(
    summary: &'static str,
    replies: &'static [Answer],
    errors: &'static [(u16, &'static [&'static str])],
) -> Operation {
    Operation {
        method: Method::GET,
        summary,
        request: Body::Empty,
        query: &[],
        headers: &[],
        replies,
        errors,
    }
}

/// A read that takes `version` (a kept version instead of the current).
const fn read_version(
    summary: &'static str,
    replies: &'static [Answer],
    errors: &'static [(u16, &'static [&'static str])],
) -> Operation {
    Operation {
        method: Method::GET,
        summary,
        request: Body::Empty,
        query: &[super::VERSION],
        headers: &[],
        replies,
        errors,
    }
}

/// A `DELETE` answering 204 (its 404s in `errors`).
pub(super) const fn delete(
    summary: &'static str,
    errors: &'static [(u16, &'static [&'static str])],
) -> Operation {
    Operation {
        method: Method::DELETE,
        summary,
        request: Body::Empty,
        query: &[],
        headers: &[],
        replies: NO_CONTENT,
        errors,
    }
}

/// 204, no body.
pub(super) const NO_CONTENT: &[Answer] = &[json(204, "Deleted.", Body::Empty)];

const AGENT_VIEW: Body = Body::Json(schema::<agent_http::AgentView<'static>>);
const SESSION_VIEW: Body = Body::Json(schema::<agent_http::SessionView>);
const MEMORY_VIEW: Body = Body::Json(schema::<agent_http::MemoryView>);
const ANY_JSON: Body = Body::Json(schema::<serde_json::Value>);

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Record),
        operations: &[
            read(
                "The agent's record.",
                &[json(200, "The record.", AGENT_VIEW)],
                &[(404, &["agent_not_found"])],
            ),
            Operation {
                method: Method::PUT,
                summary: "Registers the agent or updates its record.",
                request: Body::Json(schema::<agent_http::AgentBody>),
                query: &[],
                headers: &[],
                replies: &[
                    json(200, "Updated.", AGENT_VIEW),
                    json(201, "Created.", AGENT_VIEW),
                ],
                errors: &[
                    (409, &["mayor_exists"]),
                    (413, &["metadata_too_large", "too_many_agents"]),
                ],
            },
            delete(
                "Destroys the agent: events, sessions, checkpoint, memory, snapshot. A fork \
                 releases what it held in its origins (503 `origin_unavailable` when one \
                 cannot be reached: delete it again).",
                &[(404, &["agent_not_found"]), (503, &["origin_unavailable"])],
            ),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/events",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Events),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "A page of the event log, or with `Accept: text/event-stream` a live tail.",
                request: Body::Empty,
                query: &[
                    ("after", "Exclusive cursor, an integer >= 0 (default 0)."),
                    ("limit", "1 to 10,000 (default 1,000)."),
                    ("session_id", "Only this session's events."),
                    ("type", "Only events of this type."),
                ],
                headers: &[
                    (
                        "Accept",
                        "`text/event-stream` asks for Server-Sent Events: the backlog, then live events.",
                    ),
                    (
                        "Last-Event-ID",
                        "An integer seq; overrides `after` (an SSE reconnect).",
                    ),
                ],
                replies: &[
                    json(
                        200,
                        "A page, or the SSE stream (`id: <seq>`, `data: <event JSON>`).",
                        Body::Json(schema::<schemas::EventPage>),
                    ),
                    json(200, "The SSE stream.", Body::Bytes("text/event-stream")),
                ],
                errors: &[(410, &["cursor_expired"])],
            },
            Operation {
                method: Method::POST,
                summary: "Appends a batch of events.",
                request: Body::Json(schema::<schemas::AppendRequest>),
                query: &[],
                headers: &[],
                replies: &[json(
                    200,
                    "The batch's seqs (`duplicate: true` for a retry).",
                    Body::Json(schema::<AppendOutcome>),
                )],
                errors: &[
                    (409, &["producer_seq_stale"]),
                    (413, &["event_too_large", "batch_too_large"]),
                ],
            },
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/sessions",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Sessions),
        operations: &[read(
            "The agent's sessions, oldest first.",
            &[json(
                200,
                "The sessions.",
                Body::Json(schema::<agent_http::SessionsView>),
            )],
            &[],
        )],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/sessions/{session}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Session(p.get("session"))),
        operations: &[
            read(
                "One session.",
                &[json(200, "The session.", SESSION_VIEW)],
                &[(404, &["session_not_found"])],
            ),
            Operation {
                method: Method::PUT,
                summary: "Creates or updates a session.",
                request: Body::Json(schema::<agent_http::SessionBody>),
                query: &[],
                headers: &[],
                replies: &[json(200, "The session.", SESSION_VIEW)],
                errors: &[(413, &["metadata_too_large"])],
            },
            delete(
                "Deletes the session and its events.",
                &[(404, &["session_not_found"])],
            ),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/conversation",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Conversation),
        operations: &[Operation {
            method: Method::GET,
            summary: "The conversation rebuilt from the agent runtime's events.",
            request: Body::Empty,
            query: &[
                ("max_turns", "1 to 1,000 (default 50)."),
                ("max_tokens", "1 to 1,000,000 (default 10,000)."),
                ("session_id", "Only this session's events."),
                (
                    "summarise",
                    "`true`: the omitted turns summarised by the configured summariser into \
                     one first turn (`summary: true`), as a dispatch does; `summary` says what \
                     happened. Default `false`.",
                ),
            ],
            headers: &[],
            replies: &[json(
                200,
                "The newest turns that fit the budget (after a summary of the older ones, \
                 with `summarise=true`).",
                Body::Json(schema::<PriorConversation>),
            )],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/checkpoint",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Checkpoint),
        operations: &[
            read_version(
                "The checkpoint document, exactly as stored.",
                &[json(200, "The document.", ANY_JSON)],
                &[(404, &["checkpoint_not_found", "version_not_found"])],
            ),
            Operation {
                method: Method::PUT,
                summary: "Stores the checkpoint (any JSON document).",
                request: ANY_JSON,
                query: &[],
                headers: &[],
                replies: &[json(
                    200,
                    "Stored.",
                    Body::Json(schema::<stasis_domain::agent_state::CheckpointStored>),
                )],
                errors: &[(413, &["checkpoint_too_large"])],
            },
            delete(
                "Deletes the checkpoint.",
                &[(404, &["checkpoint_not_found"])],
            ),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/memory",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Memory),
        operations: &[Operation {
            method: Method::GET,
            summary: "Memory entries, sorted by key.",
            request: Body::Empty,
            query: &[
                ("prefix", "Keys that start with it."),
                (
                    "q",
                    "Entries whose value's JSON text contains it (case-insensitive).",
                ),
                ("limit", "1 to 1,000 (default 100)."),
            ],
            headers: &[],
            replies: &[json(
                200,
                "The entries.",
                Body::Json(schema::<agent_http::MemoryListView>),
            )],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/memory/{key}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::MemoryEntry(p.get("key"))),
        operations: &[
            read_version(
                "One memory entry.",
                &[json(200, "The entry.", MEMORY_VIEW)],
                &[(404, &["memory_not_found", "version_not_found"])],
            ),
            Operation {
                method: Method::PUT,
                summary: "Stores a memory value (any JSON value).",
                request: ANY_JSON,
                query: &[],
                headers: &[],
                replies: &[json(200, "The entry.", MEMORY_VIEW)],
                errors: &[(413, &["memory_value_too_large"])],
            },
            delete("Deletes the entry.", &[(404, &["memory_not_found"])]),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/export",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Export),
        operations: &[read(
            "The agent as a `stasis.agent.v1` manifest, streamed.",
            &[json(
                200,
                "The manifest (a failure after the body started cuts it).",
                Body::Json(schema::<Manifest>),
            )],
            &[
                (500, &["snapshot_corrupt"]),
                (503, &["snapshot_propagating"]),
            ],
        )],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/import",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Import),
        operations: &[Operation {
            method: Method::PUT,
            summary: "Replaces everything the agent has with a manifest, whole or in parts.",
            request: Body::Json(schema::<Manifest>),
            query: &[
                ("import_id", "An import in parts: its id (with `part`)."),
                ("part", "The part's number, from 1."),
                ("commit", "`true` on the last part."),
            ],
            headers: &[],
            replies: &[
                json(
                    200,
                    "Imported: what was stored.",
                    Body::Json(schema::<ImportSummary>),
                ),
                json(
                    202,
                    "A part staged.",
                    Body::Json(schema::<crate::import::PartAccepted<'static>>),
                ),
            ],
            errors: &[
                (
                    400,
                    &[
                        "invalid_manifest",
                        "sha256_mismatch",
                        "invalid_workspace_manifest",
                    ],
                ),
                (404, &["import_not_found"]),
                (
                    409,
                    &[
                        "mayor_exists",
                        "import_part_out_of_order",
                        "import_superseded",
                        "chunks_missing",
                    ],
                ),
                (
                    413,
                    &[
                        "snapshot_too_large",
                        "too_many_agents",
                        "workspace_too_large",
                    ],
                ),
                (503, &["snapshot_propagating", "chunk_being_collected"]),
            ],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/dispatch",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Dispatch),
        operations: &[Operation {
            method: Method::POST,
            summary: "Dispatches the agent again (refused while the town drains).",
            request: Body::OptionalJson(schema::<mayor_http::DispatchBody>),
            query: &[],
            headers: &[],
            replies: &[json(
                200,
                "The dispatch.",
                Body::Json(schema::<mayor_http::DispatchView>),
            )],
            errors: &[
                (404, &["agent_not_found"]),
                (413, &["message_too_large"]),
                (503, &["town_draining"]),
            ],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/inbox",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Inbox),
        operations: &[Operation {
            method: Method::POST,
            summary: "A message for the agent: stored in its log, then delivered, re-dispatched or deferred (as a Mayor message).",
            request: Body::Json(schema::<mayor_http::MessageBody>),
            query: &[],
            headers: &[(
                "Idempotency-Key",
                "1 to 255 visible ASCII characters, repeated on every retry: the retry has the first attempt's effect only.",
            )],
            replies: &[
                json(
                    200,
                    "`deliver` (a live session in a live container) or `redispatch`.",
                    Body::Json(schema::<mayor_http::MessageView>),
                ),
                json(
                    202,
                    "`deferred`: the town is draining.",
                    Body::Json(schema::<mayor_http::MessageView>),
                ),
            ],
            errors: &[
                (404, &["agent_not_found"]),
                (409, &["producer_seq_stale"]),
                (413, &["message_too_large"]),
            ],
        }],
    },
];
