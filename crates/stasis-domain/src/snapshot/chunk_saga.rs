//! The delta protocol's steps across the agent's object and the KV store:
//! which chunks are missing, a chunk's upload (verified, written to KV,
//! then recorded), the manifest's commit, a chunk's verified read, and the
//! collection of chunks nothing names any more.
//!
//! The order keeps crashes and races harmless: an upload claims a chunk
//! before its key is written and records it after, the object names it in
//! a manifest only once recorded, and a collection claims a chunk before
//! its key goes and drops the row after ([`super::chunk_claims`]). A crash
//! leaves at worst claims a later upload or collection takes over, or KV
//! keys no row claims (a listing sweep deletes them); never a manifest
//! naming a missing chunk.

use super::{
    COLLECT_BATCH, Precondition, SnapshotMeta,
    chunk_calls::{ChunkSource, Plan},
    chunk_claims::{Claim, Taken},
    chunk_key,
    digest::{CORRUPT, SHA256_MISMATCH},
    manifest::Manifest,
    operations as op,
    ports::{BlobStore, SnapshotObject, fetch_visible},
};
use crate::{DomainError, Refusal};

/// How an upload's claims age.
#[derive(Debug, Clone, Copy)]
pub struct Upload {
    /// How long its chunks are kept uncommitted (ms).
    pub pending_ttl_ms: i64,
    /// Collection claims made before this (ms) were abandoned.
    pub stale_before: i64,
}

/// How long an upload waits, in all, for collections deleting the chunks
/// it claims; they take milliseconds, so only a stuck one makes it give up.
const BUSY_WAITS_MS: [u64; 8] = [5, 10, 20, 40, 80, 160, 320, 640];

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
    let claims = claim(object, blobs, vec![actual.clone()], upload).await?;
    if claims.first() == Some(&Claim::Held) {
        return Ok(false);
    }
    blobs.put(&chunk_key(key_prefix, name), bytes).await?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    record(object, vec![(actual, size)], upload)
        .await
        .map(|fresh| fresh.first().copied().unwrap_or(false))
}

/// Claims `chunks` for an upload, waiting while a collection deletes any
/// of them; never answers [`Claim::Busy`].
pub async fn claim(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    chunks: Vec<String>,
    upload: Upload,
) -> Result<Vec<Claim>, DomainError> {
    for wait in BUSY_WAITS_MS.iter().copied().map(Some).chain([None]) {
        let step = op::claim_uploads(chunks.clone(), upload.pending_ttl_ms, upload.stale_before);
        let claims = object.run(step).await?;
        if !claims.contains(&Claim::Busy) {
            return Ok(claims);
        }
        match wait {
            Some(ms) => blobs.pause(ms).await,
            None => break,
        }
    }
    Err(DomainError::Unavailable(Refusal::new(
        "chunk_being_collected",
        "a chunk of this upload is being collected as garbage right now; upload it again shortly",
    )))
}

/// Records chunks an upload claimed and KV holds.
pub async fn record(
    object: &impl SnapshotObject,
    chunks: Vec<(String, u64)>,
    upload: Upload,
) -> Result<Vec<bool>, DomainError> {
    object
        .run(op::record_chunks(chunks, upload.pending_ttl_ms))
        .await
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
    /// How long the superseded version's chunks stay readable (ms).
    pub grace_ms: i64,
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

/// One collection step: up to [`COLLECT_BATCH`] chunks nothing names (past
/// their grace, and no upload is about to) are claimed, deleted from KV,
/// then their rows dropped. Returns how many went. `stale_before`: claims
/// of other collections made before it were abandoned.
pub async fn collect(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    stale_before: i64,
) -> Result<u64, DomainError> {
    let taken = object
        .run(op::collect_take(COLLECT_BATCH, stale_before))
        .await?;
    delete_chunks(object, blobs, key_prefix, taken).await
}

/// Deletes chunks a collection took, then tells the object.
pub(super) async fn delete_chunks(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    taken: Taken<String>,
) -> Result<u64, DomainError> {
    if taken.chunks.is_empty() {
        return Ok(0);
    }
    let keys: Vec<String> = taken
        .chunks
        .iter()
        .map(|c| chunk_key(key_prefix, c))
        .collect();
    blobs.delete_all(&keys).await?;
    let count = u64::try_from(taken.chunks.len()).unwrap_or(u64::MAX);
    object
        .run(op::collect_done(taken.chunks, taken.claim_at))
        .await?;
    Ok(count)
}

/// Collection steps until none is left or `max_steps` ran.
pub async fn collect_all(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    stale_before: i64,
    max_steps: u32,
) -> Result<u64, DomainError> {
    let mut total = 0;
    for _ in 0..max_steps {
        let went = collect(object, blobs, key_prefix, stale_before).await?;
        total += went;
        if went == 0 {
            break;
        }
    }
    Ok(total)
}
