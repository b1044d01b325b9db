//! The snapshot routes: the whole file and the delta protocol.

use super::{
    Answer, Body, Header, Operation, Route,
    agent::{agent, delete, json},
    schema,
};
use crate::{endpoint::AgentEndpoint, snapshot_delta};
use http::Method;
use stasis_domain::snapshot::SnapshotMeta;

const OCTETS: &str = "application/octet-stream";

/// What every answer naming a snapshot carries.
const DESCRIBED: &[Header] = &[
    Header {
        name: "ETag",
        description: "`\"<sha256>\"`.",
    },
    Header {
        name: "X-Stasis-Sha256",
        description: "The bytes' sha256, 64 lowercase hex digits.",
    },
    Header {
        name: "X-Stasis-Snapshot-Version",
        description: "The snapshot's version.",
    },
    Header {
        name: "X-Stasis-Event-Seq",
        description: "Its event watermark.",
    },
];

const NOT_MODIFIED: Answer = Answer {
    status: 304,
    description: "`If-None-Match` matched: the headers, no body.",
    body: Body::Empty,
    headers: DESCRIBED,
};

const IF_MATCH: (&str, &str) = (
    "If-Match",
    "`\"<etag>\"` or `*`: 412 unless the current snapshot matches.",
);
const IF_NONE_MATCH: (&str, &str) = ("If-None-Match", "`\"<etag>\"` or `*`: 304 when it matches.");
const EVENT_SEQ: (&str, &str) = (
    "X-Stasis-Event-Seq",
    "The event watermark to store (default: the agent's last seq).",
);

const STORED: &[Answer] = &[Answer {
    status: 201,
    description: "Stored.",
    body: Body::Json(schema::<SnapshotMeta>),
    headers: DESCRIBED,
}];

const UPLOAD_HEADERS: &[(&str, &str)] = &[
    (
        "X-Stasis-Sha256",
        "64 lowercase hex digits: 400 `sha256_mismatch` if the body hashes otherwise.",
    ),
    IF_MATCH,
    EVENT_SEQ,
];

const UPLOAD_ERRORS: &[(u16, &[&str])] = &[
    (400, &["sha256_mismatch"]),
    (412, &["precondition_failed"]),
    (413, &["snapshot_too_large"]),
    (503, &["snapshot_propagating", "chunk_being_collected"]),
];

const fn upload(method: Method) -> Operation {
    Operation {
        method,
        summary: "Stores a whole snapshot (the server splits it into chunks).",
        request: Body::Bytes(OCTETS),
        query: &[],
        headers: UPLOAD_HEADERS,
        replies: STORED,
        errors: UPLOAD_ERRORS,
    }
}

pub(super) static ROUTES: &[Route] = &[
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::Snapshot),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "The snapshot's bytes, verified as they are sent.",
                request: Body::Empty,
                query: &[super::VERSION],
                headers: &[IF_NONE_MATCH],
                replies: &[
                    Answer {
                        status: 200,
                        description: "The bytes.",
                        body: Body::Bytes(OCTETS),
                        headers: DESCRIBED,
                    },
                    NOT_MODIFIED,
                ],
                errors: &[
                    (404, &["snapshot_not_found", "version_not_found"]),
                    (500, &["snapshot_corrupt"]),
                    (503, &["snapshot_propagating"]),
                ],
            },
            upload(Method::PUT),
            upload(Method::POST),
            delete(
                "Deletes the snapshot; chunks only it named are collected.",
                &[(404, &["snapshot_not_found"])],
            ),
        ],
    },
    Route {
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot/missing",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::SnapshotMissing),
        operations: &[Operation {
            method: Method::POST,
            summary: "Which of these chunks the agent's store lacks.",
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
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot/chunks/{sha256}",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::SnapshotChunk(p.get("sha256"))),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "One chunk's bytes.",
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
                summary: "Uploads one chunk, named by its sha256.",
                request: Body::Bytes(OCTETS),
                query: &[],
                headers: &[],
                replies: &[
                    json(
                        200,
                        "The agent held it already.",
                        Body::Json(schema::<snapshot_delta::ChunkReply<'static>>),
                    ),
                    json(
                        201,
                        "Stored.",
                        Body::Json(schema::<snapshot_delta::ChunkReply<'static>>),
                    ),
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
        template: "/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot/manifest",
        public: false,
        endpoint: |p| agent(p, AgentEndpoint::SnapshotManifest),
        operations: &[
            Operation {
                method: Method::GET,
                summary: "The current snapshot as a manifest of chunks.",
                request: Body::Empty,
                query: &[super::VERSION],
                headers: &[IF_NONE_MATCH],
                replies: &[
                    Answer {
                        status: 200,
                        description: "The manifest.",
                        body: Body::Json(schema::<snapshot_delta::ManifestReply<'static>>),
                        headers: DESCRIBED,
                    },
                    NOT_MODIFIED,
                ],
                errors: &[(404, &["snapshot_not_found", "version_not_found"])],
            },
            Operation {
                method: Method::PUT,
                summary: "Commits a manifest whose chunks the agent holds.",
                request: Body::Json(schema::<snapshot_delta::ManifestBody>),
                query: &[],
                headers: &[IF_MATCH, EVENT_SEQ],
                replies: &[Answer {
                    status: 201,
                    description: "Committed.",
                    body: Body::Json(schema::<snapshot_delta::Committed<'static>>),
                    headers: DESCRIBED,
                }],
                errors: &[
                    (400, &["invalid_manifest"]),
                    (409, &["chunks_missing"]),
                    (412, &["precondition_failed"]),
                    (413, &["snapshot_too_large"]),
                ],
            },
        ],
    },
];
