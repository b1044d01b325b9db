//! The delta protocol's steps across the agent's object and the KV store:
//! which chunks are missing, a chunk's upload (verified, written to KV,
//! then recorded), the manifest's commit, a chunk's verified read, and the
//! collection of chunks nothing names any more.
//!
//! The order keeps crashes harmless: a chunk is in KV before the object
//! records it, the object names it in a manifest only once recorded, and a
//! collection marks a chunk `deleting` before its KV key goes and `gone`
//! after. A crash leaves at worst KV keys the object has no row for (a
//! listing sweep claims and deletes them) or rows a later collection
//! finishes; never a manifest naming a missing chunk.

use super::{
    COLLECT_BATCH, Precondition, SnapshotMeta,
    chunk_calls::{ChunkSource, Plan},
    chunk_key,
    digest::{CORRUPT, SHA256_MISMATCH},
    manifest::Manifest,
    operations as op,
    ports::{BlobStore, SnapshotObject, fetch_visible},
};
use crate::DomainError;

/// When an upload began and how long its chunks are kept while no manifest
/// names them.
#[derive(Debug, Clone, Copy)]
pub struct Upload {
    /// When the upload began (ms).
    pub started_at: i64,
    /// How long its chunks are kept uncommitted (ms).
    pub pending_ttl_ms: i64,
    /// How far the upload's clock may lag the object's (ms).
    pub clock_slack_ms: i64,
}

/// The chunks of `chunks` the agent's store lacks, once each, in order;
/// the held ones are kept for `pending_ttl_ms`.
pub async fn missing(
    object: &impl SnapshotObject,
    chunks: Vec<String>,
    pending_ttl_ms: i64,
) -> Result<Vec<String>, DomainError> {
    object.run(op::missing(chunks, pending_ttl_ms)).await
}

/// Stores one chunk: its bytes must hash to `name`; KV first, then the
/// object's record. Returns whether the store lacked it.
pub async fn put_chunk(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    name: &str,
    bytes: &[u8],
    upload: Upload,
) -> Result<bool, DomainError> {
    let actual = blobs.sha256_hex(bytes).await;
    if actual != name {
        return Err(DomainError::invalid(
            SHA256_MISMATCH,
            format!("the body hashes to {actual}, not to the chunk name {name}"),
        ));
    }
    blobs.put(&chunk_key(key_prefix, name), bytes).await?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    record(object, vec![(actual, size)], upload)
        .await
        .map(|fresh| fresh.first().copied().unwrap_or(false))
}

/// Records chunks KV holds.
pub async fn record(
    object: &impl SnapshotObject,
    chunks: Vec<(String, u64)>,
    upload: Upload,
) -> Result<Vec<bool>, DomainError> {
    let step = op::record_chunks(
        chunks,
        upload.started_at,
        upload.pending_ttl_ms,
        upload.clock_slack_ms,
    );
    object.run(step).await
}

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
}

/// Switches the agent to a manifest whose chunks its store holds; then the
/// superseded single key goes. The chunks only the superseded manifest
/// named are the caller's to [`collect`] after: the runtime decides
/// whether that happens before or after the answer.
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

/// Refuses bytes that do not hash to their chunk's name.
pub async fn verify_chunk(
    blobs: &impl BlobStore,
    name: &str,
    bytes: &[u8],
) -> Result<(), DomainError> {
    check_chunk(name, &blobs.sha256_hex(bytes).await, bytes.len())
}

/// Refuses a chunk of `len` bytes that hash to `actual`, not to its name.
pub fn check_chunk(name: &str, actual: &str, len: usize) -> Result<(), DomainError> {
    if actual == name {
        return Ok(());
    }
    Err(DomainError::Storage(format!(
        "{CORRUPT}: chunk {name} is corrupt: its {len} bytes hash to {actual}; refusing to serve \
         them"
    )))
}

/// One collection step: up to [`COLLECT_BATCH`] chunks nothing names (and
/// no upload is about to) are deleted from KV, then marked gone. Returns
/// how many went.
pub async fn collect(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
) -> Result<u64, DomainError> {
    let taken = object.run(op::collect_take(COLLECT_BATCH)).await?;
    delete_chunks(object, blobs, key_prefix, taken).await
}

/// Deletes chunks a collection took, then tells the object.
pub(super) async fn delete_chunks(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    chunks: Vec<String>,
) -> Result<u64, DomainError> {
    if chunks.is_empty() {
        return Ok(0);
    }
    let keys: Vec<String> = chunks.iter().map(|c| chunk_key(key_prefix, c)).collect();
    blobs.delete_all(&keys).await?;
    let count = u64::try_from(chunks.len()).unwrap_or(u64::MAX);
    object.run(op::collect_done(chunks)).await?;
    Ok(count)
}

/// Collection steps until none is left or `max_steps` ran.
pub async fn collect_all(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    max_steps: u32,
) -> Result<u64, DomainError> {
    let mut total = 0;
    for _ in 0..max_steps {
        let went = collect(object, blobs, key_prefix).await?;
        total += went;
        if went == 0 {
            break;
        }
    }
    Ok(total)
}
