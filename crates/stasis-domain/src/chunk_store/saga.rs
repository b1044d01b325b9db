//! The chunk steps across the agent's object and the KV store: which
//! chunks are missing, a chunk's upload (verified, claimed, written to KV,
//! then recorded), a chunk's verified read, the collection of chunks no
//! version names any more, and the listing sweep of keys no row claims.
//!
//! The order keeps crashes and races harmless: an upload claims a chunk
//! before its key is written and records it after, an owner names it in a
//! manifest only once recorded, and a collection claims a chunk before its
//! key goes and drops the row after ([`super::claims`]). A crash leaves at
//! worst claims a later upload or collection takes over, or KV keys no row
//! claims (a listing sweep deletes them); never a manifest naming a
//! missing chunk.

use super::{
    COLLECT_BATCH,
    claims::{Claim, Taken},
    digest::{CORRUPT, SHA256_MISMATCH, is_sha256_hex},
    keys::chunk_key,
    lineage::lineage_key,
    operations as op,
    ports::{BlobStore, ChunkObject, fetch_visible},
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
    object: &impl ChunkObject,
    chunks: Vec<String>,
    pending_ttl_ms: i64,
) -> Result<Vec<String>, DomainError> {
    object.run_chunk(op::missing(chunks, pending_ttl_ms)).await
}

/// Stores one chunk: its bytes must hash to `name`; KV first, then the
/// object's record. Returns whether the store lacked it.
pub async fn put_chunk(
    object: &impl ChunkObject,
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
    object: &impl ChunkObject,
    blobs: &impl BlobStore,
    chunks: Vec<String>,
    upload: Upload,
) -> Result<Vec<Claim>, DomainError> {
    for wait in BUSY_WAITS_MS.iter().copied().map(Some).chain([None]) {
        let step = op::claim_uploads(chunks.clone(), upload.pending_ttl_ms, upload.stale_before);
        let claims = object.run_chunk(step).await?;
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
    object: &impl ChunkObject,
    chunks: Vec<(String, u64)>,
    upload: Upload,
) -> Result<Vec<bool>, DomainError> {
    object
        .run_chunk(op::record_chunks(chunks, upload.pending_ttl_ms))
        .await
}

/// One chunk's bytes from KV (retried while KV does not show them yet),
/// verified against its name.
pub async fn read_chunk(
    blobs: &impl BlobStore,
    key_prefix: &str,
    name: &str,
) -> Result<Vec<u8>, DomainError> {
    let bytes = fetch_visible(blobs, &chunk_key(key_prefix, name)).await?;
    verify_chunk(blobs, name, &bytes).await?;
    Ok(bytes)
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
    object: &impl ChunkObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    stale_before: i64,
) -> Result<u64, DomainError> {
    let taken = object
        .run_chunk(op::collect_take(COLLECT_BATCH, stale_before))
        .await?;
    delete_chunks(object, blobs, key_prefix, taken).await
}

/// Deletes chunks a collection took, then tells the object.
async fn delete_chunks(
    object: &impl ChunkObject,
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
        .run_chunk(op::collect_done(taken.chunks, taken.claim_at))
        .await?;
    Ok(count)
}

/// Collection steps until none is left or `max_steps` ran.
pub async fn collect_all(
    object: &impl ChunkObject,
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

/// The listing sweep of the agent's folder `prefix`: chunk keys no row
/// claims, and other keys not in `in_use`, go. `in_use` must hold every
/// key of the agent's owners beside its chunks (today kilo.db's single
/// keys). Every upload claims its chunk's row before it writes the key, so
/// an upload in flight is never taken. Returns how many went.
pub async fn sweep_listing(
    object: &impl ChunkObject,
    blobs: &impl BlobStore,
    prefix: &str,
    in_use: &[String],
) -> Result<u32, DomainError> {
    let chunk_prefix = chunk_key(prefix, "");
    // A fork's lineage is named by no row, and never changes.
    let lineage = lineage_key(prefix);
    let mut removed = 0;
    let mut cursor = None;
    // Bounded: a KV page holds up to 1,000 keys.
    for _ in 0..1_000 {
        let (keys, next) = blobs.list(prefix, cursor).await?;
        let mut chunks = Vec::new();
        for key in keys {
            if let Some(chunk) = key.strip_prefix(&chunk_prefix) {
                chunks.push(chunk.to_owned());
            } else if !in_use.contains(&key) && key != lineage {
                blobs.delete(&key).await?;
                removed += 1;
            }
        }
        removed += sweep_orphan_chunks(object, blobs, prefix, chunks).await?;
        match next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(removed)
}

/// Deletes the chunk keys found in KV that the object has no row for.
async fn sweep_orphan_chunks(
    object: &impl ChunkObject,
    blobs: &impl BlobStore,
    prefix: &str,
    found: Vec<String>,
) -> Result<u32, DomainError> {
    let found: Vec<String> = found.into_iter().filter(|c| is_sha256_hex(c)).collect();
    if found.is_empty() {
        return Ok(0);
    }
    let claimed = object.run_chunk(op::claim_orphans(found)).await?;
    let went = delete_chunks(object, blobs, prefix, claimed).await?;
    Ok(u32::try_from(went).unwrap_or(u32::MAX))
}
