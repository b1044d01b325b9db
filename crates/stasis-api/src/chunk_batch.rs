//! Many workspace chunks in one request, both ways: `POST
//! /workspace/batch/upload` takes a framed body of chunks and stores them
//! all (every frame verified against its name before anything is stored),
//! and `POST /workspace/batch/fetch` answers a list of names with their
//! chunks in the same framing.
//!
//! The framing and the limits are the domain's
//! ([`stasis_domain::chunk_store::frames`]).

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{Snapshots, body, error::ApiError, reply, snapshot::corrupt_or_other};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http::{HeaderValue, Response, StatusCode, header};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    DomainError, Refusal,
    chunk_store::{
        self, batch,
        frames::{self, BATCH_BODY_LIMIT, FRAME_HEADER, MAX_BATCH_CHUNKS, too_large},
        saga::Upload,
    },
    ids::AgentKey,
};
use std::collections::HashSet;

/// Chunk reads a batch fetch has in flight at once.
const READS_IN_FLIGHT: usize = 8;

/// What a batch upload answers.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct UploadReply {
    /// Distinct chunks the batch held.
    chunks: usize,
    /// Of those, the ones the agent's store lacked and now holds.
    stored: usize,
    /// Bytes of chunks in the body.
    bytes: u64,
}

/// `POST /workspace/batch/upload`: stores every frame, or none when one is
/// malformed or does not hash to its name.
pub async fn upload(
    objects: &impl Snapshots,
    key: &AgentKey,
    body: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let frames = frames::decode_frames(body)?;
    let bytes = frames.iter().map(|(_, chunk)| chunk.len() as u64).sum();
    let names: Vec<String> = frames
        .iter()
        .map(|(name, _)| chunk_store::to_hex(name))
        .collect();
    let frames: Vec<batch::Frame<'_>> = frames
        .iter()
        .zip(&names)
        .map(|((_, bytes), name)| batch::Frame { name, bytes })
        .collect();
    let stored = batch::put_chunks(
        &objects.snapshot_object(key),
        &objects.snapshot_blobs()?,
        &chunk_store::key_prefix(key),
        &frames,
        Upload {
            pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
            stale_before: objects.snapshot_claims_stale_before(),
        },
    )
    .await?;
    let answer = UploadReply {
        chunks: stored.chunks,
        stored: stored.fresh,
        bytes,
    };
    Ok(reply::json(StatusCode::OK, &answer))
}

/// `POST /workspace/batch/fetch`'s body.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FetchBody {
    /// Chunk names (sha256, hex), at most [`MAX_BATCH_CHUNKS`].
    chunks: Vec<String>,
}

/// `POST /workspace/batch/fetch`: the named chunks as frames, each once,
/// in the order first named; 404 `chunk_not_found` (its `missing` listing
/// them) when the store lacks any, 413 when they would pass the limit.
pub async fn fetch(
    objects: &impl Snapshots,
    key: &AgentKey,
    body: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let request: FetchBody = body::parse_json(body)?;
    if request.chunks.len() > MAX_BATCH_CHUNKS {
        return Err(too_large(format!("a fetch names at most {MAX_BATCH_CHUNKS} chunks")).into());
    }
    let mut seen = HashSet::new();
    let mut names = Vec::new();
    for name in request.chunks {
        if !chunk_store::is_sha256_hex(&name) {
            return Err(ApiError::invalid_request(format!(
                "chunks: {name:?} is not a sha256 (64 hex digits)"
            )));
        }
        let name = name.to_ascii_lowercase();
        if seen.insert(name.clone()) {
            names.push(name);
        }
    }
    let object = objects.snapshot_object(key);
    let sizes = batch::sizes(&object, names.clone()).await?;
    let missing: Vec<&String> = names
        .iter()
        .zip(&sizes)
        .filter(|(_, size)| size.is_none())
        .map(|(name, _)| name)
        .collect();
    if !missing.is_empty() {
        let error = ApiError::from(DomainError::NotFound(Refusal::new(
            "chunk_not_found",
            format!(
                "this agent's store holds no chunk {} ({} of the {} named)",
                missing[0],
                missing.len(),
                names.len()
            ),
        )));
        return Err(error.with("missing", missing.into_iter().cloned().collect::<Vec<_>>()));
    }
    let total: u64 = sizes
        .iter()
        .map(|size| size.unwrap_or(0) + FRAME_HEADER as u64)
        .sum();
    if total > BATCH_BODY_LIMIT {
        return Err(too_large(format!(
            "these chunks take {total} bytes framed; a batch holds at most {BATCH_BODY_LIMIT}"
        ))
        .into());
    }
    let blobs = objects.snapshot_blobs()?;
    let prefix = chunk_store::key_prefix(key);
    // A few reads at a time, in order: memory stays a batch, and the host's
    // blocking threads (each a read) stay few.
    let (blobs, prefix) = (&blobs, prefix.as_str());
    let chunks: Vec<Vec<u8>> = futures::stream::iter(names.clone())
        .map(|name: String| async move { batch::read_held(blobs, prefix, &name).await })
        .buffered(READS_IN_FLIGHT)
        .try_collect()
        .await
        .map_err(corrupt_or_other)?;
    let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for (name, chunk) in names.iter().zip(&chunks) {
        let raw = chunk_store::from_hex(name).unwrap_or([0; 32]);
        frames::encode_frame(&mut out, &raw, chunk);
    }
    let mut response = Response::new(Bytes::from(out));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok(response)
}
