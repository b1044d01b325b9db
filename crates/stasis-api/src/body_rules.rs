//! What body each endpoint takes: its content type and its size limit, so
//! that an oversized body is refused from its `Content-Length` (or as soon
//! as it passes the limit) without being read.

use crate::{
    body,
    error::ApiError,
    events,
    route::{AgentEndpoint, Endpoint, TownEndpoint},
    snapshot, snapshot_delta,
};
use http::{HeaderMap, Method};
use stasis_domain::{DomainError, agent_state::MAX_DOCUMENT_BYTES};

/// Requests that carry no body worth reading, or a small JSON one.
const SMALL: u64 = 64 * 1024;
/// A body carrying one document (metadata, a message) of up to 1 MiB, with
/// room for its JSON envelope and escaping.
const DOCUMENT_ENVELOPE: u64 = 2 * MAX_DOCUMENT_BYTES + SMALL;
/// An import manifest's body unless the runtime sets another limit (16
/// GiB): retention's 10,000 events of up to 1 MiB, their sessions and
/// memory, and a 25 MiB snapshot as base64 fit, with room. The body is
/// streamed, so the limit bounds transfer, not memory.
pub const DEFAULT_IMPORT_LIMIT: u64 = 16 * 1024 * 1024 * 1024;

/// The runtime's configured body limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// An import's body.
    pub import: u64,
    /// A whole-file snapshot's body (the snapshot limit).
    pub snapshot: u64,
}

/// Checks the content type and returns the body limit.
pub fn check(
    endpoint: &Endpoint,
    method: &Method,
    headers: &HeaderMap,
    limits: Limits,
) -> Result<u64, ApiError> {
    let takes_body = matches!(*method, Method::PUT | Method::POST);
    if !takes_body {
        return Ok(SMALL);
    }
    match endpoint {
        Endpoint::Agent(_, AgentEndpoint::Snapshot) => {
            snapshot::check_content_type(headers)?;
            return Ok(limits.snapshot);
        }
        Endpoint::Agent(_, AgentEndpoint::SnapshotChunk(_) | AgentEndpoint::WorkspaceChunk(_)) => {
            snapshot::check_content_type(headers)?;
            return Ok(snapshot_delta::CHUNK_BODY_LIMIT);
        }
        Endpoint::Agent(_, AgentEndpoint::WorkspaceBatchUpload) => {
            snapshot::check_content_type(headers)?;
            return Ok(stasis_domain::chunk_store::frames::BATCH_BODY_LIMIT);
        }
        _ => {}
    }
    body::check_json_content_type(headers)?;
    Ok(match endpoint {
        Endpoint::Agent(_, AgentEndpoint::Events) => events::APPEND_BODY_LIMIT,
        Endpoint::Agent(_, AgentEndpoint::Checkpoint | AgentEndpoint::MemoryEntry(_)) => {
            MAX_DOCUMENT_BYTES
        }
        Endpoint::Agent(_, AgentEndpoint::Import) => limits.import,
        Endpoint::Agent(
            _,
            AgentEndpoint::SnapshotMissing
            | AgentEndpoint::SnapshotManifest
            | AgentEndpoint::WorkspaceMissing
            | AgentEndpoint::WorkspaceManifest,
        ) => snapshot_delta::LIST_BODY_LIMIT,
        Endpoint::Agent(
            _,
            AgentEndpoint::Record
            | AgentEndpoint::Session(_)
            | AgentEndpoint::Dispatch
            | AgentEndpoint::Inbox,
        )
        | Endpoint::Town(_, TownEndpoint::MayorMessage | TownEndpoint::Registry) => {
            DOCUMENT_ENVELOPE
        }
        _ => SMALL,
    })
}

/// The 413 for a body past `limit`, with the code its endpoint documents
/// for the document it takes; a method that takes no document (a `GET` or
/// `DELETE` with a body) gets `body_too_large` with the limit it broke.
pub fn too_large(endpoint: &Endpoint, method: &Method, limit: u64) -> ApiError {
    if !matches!(*method, Method::PUT | Method::POST) {
        return ApiError::body_too_large(limit);
    }
    let code = match endpoint {
        Endpoint::Agent(_, AgentEndpoint::Snapshot) => {
            return ApiError::from(stasis_domain::snapshot::too_large(limit));
        }
        Endpoint::Agent(_, AgentEndpoint::SnapshotChunk(_) | AgentEndpoint::WorkspaceChunk(_)) => {
            "chunk_too_large"
        }
        Endpoint::Agent(_, AgentEndpoint::WorkspaceBatchUpload) => {
            stasis_domain::chunk_store::frames::BATCH_TOO_LARGE
        }
        Endpoint::Agent(_, AgentEndpoint::Checkpoint) => "checkpoint_too_large",
        Endpoint::Agent(_, AgentEndpoint::MemoryEntry(_)) => "memory_value_too_large",
        _ => return ApiError::body_too_large(limit),
    };
    ApiError::from(DomainError::too_large(
        code,
        format!("the document may hold at most {limit} bytes"),
        limit,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route;

    fn refusal(path: &str, method: Method) -> (String, Option<serde_json::Value>) {
        let endpoint = route::resolve(path, &method).map_err(|e| e.code);
        let Ok(endpoint) = endpoint else {
            return (format!("unroutable: {endpoint:?}"), None);
        };
        let limits = Limits {
            import: u64::MAX,
            snapshot: 1 << 30,
        };
        let limit = check(&endpoint, &method, &HeaderMap::new(), limits).unwrap_or(0);
        let error = too_large(&endpoint, &method, limit);
        (error.code, error.extra.get("limit").cloned())
    }

    #[test]
    fn a_document_too_large_is_named_by_its_route_only_where_it_takes_one() {
        let snapshot = "/api/towns/t/rigs/r/agents/a/db-snapshot";
        let checkpoint = "/api/towns/t/rigs/r/agents/a/checkpoint";
        assert_eq!(refusal(snapshot, Method::PUT).0, "snapshot_too_large");
        assert_eq!(
            refusal(checkpoint, Method::PUT),
            (
                "checkpoint_too_large".into(),
                Some(MAX_DOCUMENT_BYTES.into())
            )
        );
        for method in [Method::GET, Method::DELETE] {
            assert_eq!(
                refusal(snapshot, method.clone()),
                ("body_too_large".into(), Some(SMALL.into()))
            );
            assert_eq!(refusal(checkpoint, method).0, "body_too_large");
        }
    }
}
