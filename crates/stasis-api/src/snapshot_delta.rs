//! The delta protocol under `/db-snapshot`: which chunks are missing
//! (`POST /missing`), a chunk's upload and read (`/chunks/{sha256}`), and
//! the manifest's commit and read (`/manifest`).

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{
    AfterCommit, Objects, Snapshots, body,
    error::ApiError,
    reply,
    snapshot::{corrupt_or_other, describe, etag_list, event_seq, not_found},
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    DomainError, Refusal, chunk_store,
    ids::AgentKey,
    snapshot::{
        SnapshotMeta, chunk_saga,
        chunk_saga::CommitRequest,
        manifest::{MAX_CHUNK_SIZE, MAX_CHUNKS, Manifest},
    },
};

/// A `/missing` or `/manifest` body: up to 32,768 hashes as JSON, with room.
pub const LIST_BODY_LIMIT: u64 = 4 * 1024 * 1024;
/// A chunk upload's body.
pub const CHUNK_BODY_LIMIT: u64 = MAX_CHUNK_SIZE;

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MissingBody {
    chunks: Vec<String>,
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct MissingReply {
    missing: Vec<String>,
}

/// What a `POST /db-snapshot/missing` found, in its response's extensions
/// (for the runtime's metrics): hashes asked about, and how many of them
/// the agent lacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkCheck {
    /// Hashes the request listed.
    pub asked: usize,
    /// Hashes the agent lacked (to be uploaded).
    pub missing: usize,
}

/// `POST /db-snapshot/missing`.
pub async fn missing(
    objects: &impl Snapshots,
    key: &AgentKey,
    body: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let request: MissingBody = body::parse_json(body)?;
    if request.chunks.len() > MAX_CHUNKS {
        return Err(ApiError::invalid_request(format!(
            "chunks may list at most {MAX_CHUNKS} hashes"
        )));
    }
    if let Some(bad) = request
        .chunks
        .iter()
        .find(|c| !chunk_store::is_sha256_hex(c))
    {
        return Err(ApiError::invalid_request(format!(
            "chunks: {bad:?} is not a sha256 (64 hex digits)"
        )));
    }
    let asked = request.chunks.len();
    let chunks = request
        .chunks
        .into_iter()
        .map(|c| c.to_ascii_lowercase())
        .collect();
    let object = objects.snapshot_object(key);
    let missing =
        chunk_store::saga::missing(&object, chunks, objects.snapshot_pending_ttl_ms()).await?;
    let check = ChunkCheck {
        asked,
        missing: missing.len(),
    };
    let mut response = reply::json(StatusCode::OK, &MissingReply { missing });
    response.extensions_mut().insert(check);
    Ok(response)
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct ChunkReply<'a> {
    sha256: &'a str,
    size: usize,
}

/// `PUT /db-snapshot/chunks/{sha256}`: 201 when stored, 200 when the agent
/// already held it.
pub async fn put_chunk<O: Objects + Snapshots>(
    objects: &O,
    key: &AgentKey,
    name: &str,
    bytes: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let fresh = chunk_store::saga::put_chunk(
        &objects.snapshot_object(key),
        &objects.snapshot_blobs()?,
        &chunk_store::key_prefix(key),
        name,
        bytes,
        chunk_store::saga::Upload {
            pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
            stale_before: objects.snapshot_claims_stale_before(),
        },
    )
    .await?;
    let status = if fresh {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let size = bytes.len();
    Ok(reply::json(status, &ChunkReply { sha256: name, size }))
}

/// `GET /db-snapshot/chunks/{sha256}`: the verified bytes.
pub async fn get_chunk(
    objects: &impl Snapshots,
    key: &AgentKey,
    name: &str,
) -> Result<Response<Bytes>, ApiError> {
    let found = chunk_saga::get_chunk(
        &objects.snapshot_object(key),
        &objects.snapshot_blobs()?,
        &chunk_store::key_prefix(key),
        name,
    )
    .await
    .map_err(corrupt_or_other)?;
    let Some(bytes) = found else {
        return Err(ApiError::from(DomainError::NotFound(Refusal::new(
            "chunk_not_found",
            format!("this agent's store holds no chunk {name}"),
        ))));
    };
    let mut response = Response::new(Bytes::from(bytes));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=31536000, immutable"),
    );
    if let Ok(value) = HeaderValue::from_str(name) {
        headers.insert("x-stasis-sha256", value);
    }
    Ok(response)
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestBody {
    size: u64,
    sha256: String,
    chunk_size: u64,
    chunks: Vec<String>,
    #[serde(default)]
    event_watermark: Option<u64>,
}

/// What a manifest commit answers: the whole-file PUT's body and the
/// chunking.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Committed<'a> {
    #[serde(flatten)]
    meta: &'a SnapshotMeta,
    chunk_size: u64,
    chunk_count: usize,
}

/// `PUT /db-snapshot/manifest`: commits a manifest whose chunks the agent
/// holds.
pub async fn put_manifest(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let precondition = etag_list(headers, header::IF_MATCH)?;
    let header_seq = event_seq(headers)?;
    let request: ManifestBody = body::parse_json(body)?;
    let manifest = Manifest {
        size: request.size,
        sha256: request.sha256,
        chunk_size: request.chunk_size,
        chunks: request.chunks,
    }
    .check()?;
    let (chunk_size, chunk_count) = (manifest.chunk_size, manifest.chunks.len());
    let commit = CommitRequest {
        manifest,
        precondition,
        event_watermark: request.event_watermark.or(header_seq),
        limit: objects.snapshot_limit(),
        sha256_from_chunks: false,
        grace_ms: objects.snapshot_grace_ms(),
    };
    let meta = chunk_saga::commit(
        &objects.snapshot_object(key),
        &objects.snapshot_blobs()?,
        commit,
    )
    .await?;
    objects.snapshot_tidy(key, AfterCommit::Collect).await;
    let body = Committed {
        meta: &meta,
        chunk_size,
        chunk_count,
    };
    let mut response = reply::json(StatusCode::CREATED, &body);
    describe(response.headers_mut(), &meta);
    Ok(response)
}

/// `GET /db-snapshot/manifest`.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct ManifestReply<'a> {
    #[serde(flatten)]
    meta: &'a SnapshotMeta,
    chunk_size: u64,
    chunks: &'a [String],
}

/// `GET /db-snapshot/manifest`: the current snapshot as a manifest (an
/// inline or single-key snapshot as one chunk).
pub async fn get_manifest(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    version: Option<u64>,
) -> Result<Response<Bytes>, ApiError> {
    let object = objects.snapshot_object(key);
    let plan = match version {
        Some(version) => chunk_saga::plan_version(&object, false, version).await?,
        None => chunk_saga::plan(&object, false).await?,
    };
    let plan = plan.ok_or_else(not_found)?;
    if let Some(wanted) = etag_list(headers, header::IF_NONE_MATCH)?
        && wanted.holds(Some(&plan.meta))
    {
        let mut response = Response::new(Bytes::new());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        describe(response.headers_mut(), &plan.meta);
        return Ok(response);
    }
    let body = ManifestReply {
        meta: &plan.meta,
        chunk_size: plan.chunk_size,
        chunks: &plan.chunks,
    };
    let mut response = reply::json(StatusCode::OK, &body);
    describe(response.headers_mut(), &plan.meta);
    Ok(response)
}
