//! The workspace routes: the chunk routes shared with `/db-snapshot`, the
//! batch upload and fetch of many chunks, the paged manifest's commit and
//! read, and the delete.

use super::{
    Answer, Body, Header, Operation, Route,
    agent::{agent, delete, json},
    schema,
};
use crate::{chunk_batch, endpoint::AgentEndpoint, snapshot_delta, workspace_http};
use http::Method;

const OCTETS: &str = "application/octet-stream";

const TAGGED: &[Header] = &[Header {
    name: "ETag",
    description: "`\"<root_hash>\"`: the tree's root hash.",
}];

const CHUNK_REPLY: Body = Body::Json(schema::<snapshot_delta::ChunkReply<'static>>);
const COMMITTED: Body = Body::Json(schema::<workspace_http::CommittedView>);

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Workspace),
        operations: &[delete(
            "Deletes the workspace; chunks only it named are collected after the grace.",
            &[(404, &["workspace_not_found"])],
        )],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace/missing",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::WorkspaceMissing),
        operations: &[Operation {
            method: Method::POST,
            summary: "Which of these chunks (file chunks or manifest pages) the agent's store lacks.",
            request: Body::Json(schema::<snapshot_delta::MissingBody>),
            query: &[],
            headers: &[],
            replies: &[json(
                200,
                "The missing ones, in request order, once each.",
                Body::Json(schema::<snapshot_delta::MissingReply>),
            )],
            errors: &[],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace/chunks/{sha256}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::WorkspaceChunk(p.get("sha256"))),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "One chunk's (or manifest page's) bytes.",
                request: Body::Empty,
                query: &[],
                headers: &[],
                replies: &[Answer {
                    status: 200,
                    description: "The chunk.",
                    body: Body::Bytes(OCTETS),
                    headers: &[
                        Header {
                            name: "X-Stasis-Sha256",
                            description: "The chunk's name.",
                        },
                        Header {
                            name: "Cache-Control",
                            description: "`private, max-age=31536000, immutable`.",
                        },
                    ],
                }],
                errors: &[
                    (404, &["chunk_not_found"]),
                    (500, &["snapshot_corrupt"]),
                    (503, &["snapshot_propagating"]),
                ],
            },
            Operation {
                method: Method::PUT,
                summary: "Uploads one chunk (or manifest page), named by its sha256.",
                request: Body::Bytes(OCTETS),
                query: &[],
                headers: &[],
                replies: &[
                    json(200, "The agent held it already.", CHUNK_REPLY),
                    json(201, "Stored.", CHUNK_REPLY),
                ],
                errors: &[
                    (400, &["sha256_mismatch"]),
                    (413, &["chunk_too_large"]),
                    (503, &["chunk_being_collected", "snapshot_propagating"]),
                ],
            },
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace/batch/upload",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::WorkspaceBatchUpload),
        operations: &[Operation {
            method: Method::POST,
            summary: "Uploads many chunks (or manifest pages) in one framed body: each frame is \
                      the chunk's sha256 (32 raw bytes), its length (u32, big-endian) and its \
                      bytes. Every frame is checked against its name before anything is stored; \
                      at most 256 chunks and 8 MiB per batch.",
            request: Body::Bytes(OCTETS),
            query: &[],
            headers: &[],
            replies: &[json(
                200,
                "Stored: the distinct chunks, how many the store lacked, the bytes.",
                Body::Json(schema::<chunk_batch::UploadReply>),
            )],
            errors: &[
                (400, &["invalid_batch", "sha256_mismatch"]),
                (413, &["batch_too_large"]),
                (503, &["chunk_being_collected", "snapshot_propagating"]),
            ],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace/batch/fetch",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::WorkspaceBatchFetch),
        operations: &[Operation {
            method: Method::POST,
            summary: "Reads many chunks (or manifest pages) in one request (a read, though a \
                      POST): the named chunks, each once in the order first named, framed as \
                      the batch upload takes them. At most 256 names and 8 MiB of frames.",
            request: Body::Json(schema::<chunk_batch::FetchBody>),
            query: &[],
            headers: &[],
            replies: &[Answer {
                status: 200,
                description: "The chunks, framed.",
                body: Body::Bytes(OCTETS),
                headers: &[],
            }],
            errors: &[
                (400, &["invalid_request"]),
                (404, &["chunk_not_found"]),
                (413, &["batch_too_large"]),
                (500, &["snapshot_corrupt"]),
                (503, &["snapshot_propagating"]),
            ],
        }],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/workspace/manifest",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::WorkspaceManifest),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "The current workspace version's manifest head (its pages are chunks).",
                request: Body::Empty,
                query: &[super::VERSION],
                headers: &[(
                    "If-None-Match",
                    "`\"<root_hash>\"` or `*`: 304 when it matches.",
                )],
                replies: &[
                    Answer {
                        status: 200,
                        description: "The head.",
                        body: Body::Json(schema::<workspace_http::VersionView>),
                        headers: TAGGED,
                    },
                    Answer {
                        status: 304,
                        description: "`If-None-Match` matched: the ETag, no body.",
                        body: Body::Empty,
                        headers: TAGGED,
                    },
                ],
                errors: &[(404, &["workspace_not_found", "version_not_found"])],
            },
            Operation {
                method: Method::PUT,
                summary: "Commits a paged manifest whose pages and chunks the agent holds.",
                request: Body::Json(schema::<workspace_http::ManifestBody>),
                query: &[],
                headers: &[
                    (
                        "If-Match",
                        "`\"<root_hash>\"` or `*`: 412 unless the current version matches.",
                    ),
                    ("If-None-Match", "`*`: 412 when a version exists."),
                    (
                        "X-Stasis-Event-Seq",
                        "The event watermark when the body gives none (default: the agent's last seq).",
                    ),
                ],
                replies: &[
                    Answer {
                        status: 201,
                        description: "Committed as a new version.",
                        body: COMMITTED,
                        headers: TAGGED,
                    },
                    Answer {
                        status: 200,
                        description: "The tree is the current version's: nothing changed.",
                        body: COMMITTED,
                        headers: TAGGED,
                    },
                ],
                errors: &[
                    (400, &["invalid_workspace_manifest"]),
                    (409, &["chunks_missing"]),
                    (412, &["precondition_failed"]),
                    (413, &["workspace_too_large"]),
                    (500, &["snapshot_corrupt"]),
                    (503, &["snapshot_propagating"]),
                ],
            },
        ],
    },
];
