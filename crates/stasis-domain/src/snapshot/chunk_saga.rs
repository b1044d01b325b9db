//! kilo.db's chunked steps across the agent's object and the KV store: the
//! manifest's commit, the current snapshot as a manifest, and one chunk's
//! verified read (of a chunked, inline or single-key snapshot). The chunks'
//! own steps (missing, upload, collection) are the chunk store's
//! ([`crate::chunk_store::saga`]).

use super::{
    Precondition, SnapshotMeta,
    chunk_calls::{ChunkSource, Plan},
    manifest::Manifest,
    operations as op,
    ports::SnapshotObject,
};
use crate::{
    DomainError,
    chunk_store::{
        keys::chunk_key,
        ports::{BlobStore, fetch_visible},
        saga::verify_chunk,
    },
};

/// What a manifest commit asks for.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    /// The manifest, checked.
    pub manifest: Manifest,
    /// `If-Match`.
    pub precondition: Option<Precondition>,
    /// The watermark given, if any.
    pub event_watermark: Option<u64>,
    /// The snapshot limit.
    pub limit: u64,
    /// Whether the server computed `manifest.sha256` over the chunks' bytes
    /// (a whole-file PUT; never a client's manifest).
    pub sha256_from_chunks: bool,
    /// How long the superseded version's chunks stay readable (ms).
    pub grace_ms: i64,
}

/// Switches the agent to a manifest whose chunks its store holds; then the
/// superseded single key goes. The chunks only the superseded manifest
/// named are the caller's to collect after
/// ([`crate::chunk_store::saga::collect`]): the runtime decides whether
/// that happens before or after the answer.
pub async fn commit(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    request: CommitRequest,
) -> Result<SnapshotMeta, DomainError> {
    let step = op::commit_manifest(
        request.manifest,
        request.precondition,
        request.event_watermark,
        request.limit,
        request.sha256_from_chunks,
        request.grace_ms,
    );
    let committed = object.run(step).await?;
    if let Some(old) = &committed.superseded_key {
        // A failure leaves an orphan for the listing sweep, nothing worse.
        let _ = blobs.delete(old).await;
    }
    Ok(committed.meta)
}

/// The current snapshot as a manifest (`with_inline`: with an inline
/// snapshot's bytes).
pub async fn plan(
    object: &impl SnapshotObject,
    with_inline: bool,
) -> Result<Option<Plan>, DomainError> {
    object.run(op::plan(with_inline)).await
}

/// Version `version` (kept, or the current one) as a manifest; 404
/// `version_not_found` for a version the agent does not keep.
pub async fn plan_version(
    object: &impl SnapshotObject,
    with_inline: bool,
    version: u64,
) -> Result<Option<Plan>, DomainError> {
    object.run(op::plan_version(with_inline, version)).await
}

/// One chunk's bytes, verified against its name; `None` when the agent's
/// store does not hold it.
pub async fn get_chunk(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    name: &str,
) -> Result<Option<Vec<u8>>, DomainError> {
    let bytes = match object.run(op::chunk_source(name.to_owned())).await? {
        None => return Ok(None),
        Some(ChunkSource::Chunks) => fetch_visible(blobs, &chunk_key(key_prefix, name)).await?,
        Some(ChunkSource::Key { key }) => fetch_visible(blobs, &key).await?,
        Some(ChunkSource::Inline { bytes }) => bytes.unwrap_or_default(),
    };
    verify_chunk(blobs, name, &bytes).await?;
    Ok(Some(bytes))
}
