//! A whole snapshot operation across the agent's object and the KV store.
//!
//! Each step that touches the object is one typed snapshot operation
//! ([`super::operations`], atomic on its own); between them the KV store is
//! written or read. The order is what makes a crash harmless: a KV key is
//! written before the metadata names it and deleted only after the metadata
//! stopped naming it, so a crash leaves at worst an orphaned key, which
//! [`sweep`] removes. It runs over the agent's object
//! ([`super::ports::SnapshotObject`]) and the chunk store's KV port.

use super::{
    Located, PutRequest, Reserved, SnapshotMeta, StagedSnapshot, operations as op,
    ports::SnapshotObject, rules,
};
use crate::{
    DomainError, Refusal,
    chunk_store::{
        self,
        digest::{CORRUPT, SHA256_MISMATCH, is_sha256_hex},
        ports::{BlobStore, fetch_visible},
    },
};

/// The seconds a client is told to wait when a key is still propagating.
pub const PROPAGATING_RETRY_AFTER_S: u64 = 2;

/// Stores a snapshot: checks, KV key first, metadata switch, then the
/// superseded key goes. Chunks a superseded manifest named, and keys a
/// crash left, are the caller's to [`sweep`] after.
pub async fn put(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    request: &PutRequest,
    body: &[u8],
) -> Result<SnapshotMeta, DomainError> {
    let written = write(object, blobs, request, body).await?;
    let committed = object
        .run(op::commit(
            written.reserved.version,
            written.sha256,
            written.size,
            request.precondition.clone(),
            request.event_watermark,
            written.reserved.kv_key.is_none().then(|| body.to_vec()),
            written.reserved.kv_key.clone(),
            request.grace_ms,
        ))
        .await;
    let committed = match committed {
        Ok(committed) => committed,
        Err(err) => {
            abandon(object, blobs, &written.reserved).await;
            return Err(err);
        }
    };
    if let Some(old) = &committed.superseded_key {
        // A failure here leaves an orphan for the sweep, nothing worse.
        let _ = blobs.delete(old).await;
    }
    Ok(committed.meta)
}

/// Stores a snapshot's bytes under a new version without switching the
/// metadata to it: an import stages its snapshot this way, and its commit
/// makes it current ([`super::staged`]). The reservation keeps the KV key
/// from sweeps until the import records it; `request.event_watermark` is
/// the watermark to give it (0 when absent).
pub async fn stage(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    request: &PutRequest,
    body: &[u8],
) -> Result<StagedSnapshot, DomainError> {
    let written = write(object, blobs, request, body).await?;
    Ok(StagedSnapshot {
        version: written.reserved.version,
        sha256: written.sha256,
        size: written.size,
        event_watermark: request.event_watermark.unwrap_or(0),
        inline: written.reserved.kv_key.is_none().then(|| body.to_vec()),
        kv_key: written.reserved.kv_key,
        chunk_size: None,
    })
}

/// Bytes stored under a reserved version.
struct Written {
    reserved: Reserved,
    sha256: String,
    size: u64,
}

/// The first half of a put: size and hash checks, a reserved version
/// (checking `If-Match`), and the KV write of a snapshot above the inline
/// limit.
async fn write(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    request: &PutRequest,
    body: &[u8],
) -> Result<Written, DomainError> {
    let size = u64::try_from(body.len()).unwrap_or(u64::MAX);
    rules::check_size(size, request.limit)?;
    let sha256 = blobs.sha256_hex(body).await;
    if let Some(expected) = &request.expected_sha256 {
        if !is_sha256_hex(expected) {
            return Err(DomainError::invalid(
                "invalid_request",
                "X-Stasis-Sha256 must be 64 hex digits",
            ));
        }
        if !expected.eq_ignore_ascii_case(&sha256) {
            return Err(DomainError::invalid(
                SHA256_MISMATCH,
                format!("the body hashes to {sha256}, not to the X-Stasis-Sha256 {expected}"),
            ));
        }
    }
    let reserved = object
        .run(op::reserve(
            size,
            request.precondition.clone(),
            request.inline_limit,
            request.key_prefix.clone(),
            request.limit,
        ))
        .await?;
    if let Some(key) = &reserved.kv_key
        && let Err(err) = blobs.put(key, body).await
    {
        let _ = object.run(op::abandon(reserved.version)).await;
        return Err(err);
    }
    Ok(Written {
        reserved,
        sha256,
        size,
    })
}

/// Gives up a reserved version whose metadata switch failed: its KV key is
/// dropped now (a sweep would otherwise, later) and the reservation goes.
async fn abandon(object: &impl SnapshotObject, blobs: &impl BlobStore, reserved: &Reserved) {
    if let Some(key) = &reserved.kv_key {
        let _ = blobs.delete(key).await;
        let _ = object.run(op::abandon(reserved.version)).await;
    }
}

/// The current snapshot's metadata, and its bytes when `with_bytes`,
/// verified against the recorded sha256.
pub async fn get(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    with_bytes: bool,
) -> Result<Option<(SnapshotMeta, Option<Vec<u8>>)>, DomainError> {
    let mut located = locate(object, with_bytes).await?;
    // A put may replace (and delete) the key between the lookup and the
    // read; then the lookup is repeated, a bounded number of times.
    for _ in 0..3 {
        let Some(Located {
            meta,
            inline,
            kv_key,
        }) = located
        else {
            return Ok(None);
        };
        if !with_bytes {
            return Ok(Some((meta, None)));
        }
        let bytes = match (inline, kv_key) {
            (Some(bytes), _) => bytes,
            (None, Some(key)) => match fetch_visible(blobs, &key).await {
                Ok(bytes) => bytes,
                Err(DomainError::Unavailable(refusal)) => {
                    let again = locate(object, with_bytes).await?;
                    if again.as_ref().map(|l| l.meta.version) == Some(meta.version) {
                        return Err(DomainError::Unavailable(refusal));
                    }
                    located = again;
                    continue;
                }
                Err(err) => return Err(err),
            },
            (None, None) => {
                return Err(DomainError::Storage(format!(
                    "snapshot version {} has neither inline bytes nor a KV key",
                    meta.version
                )));
            }
        };
        let actual = blobs.sha256_hex(&bytes).await;
        verify(&meta, &bytes, &actual)?;
        return Ok(Some((meta, Some(bytes))));
    }
    Err(DomainError::Unavailable(Refusal::new(
        "snapshot_propagating",
        "the snapshot is being replaced; retry shortly",
    )))
}

async fn locate(
    object: &impl SnapshotObject,
    with_bytes: bool,
) -> Result<Option<Located>, DomainError> {
    object.run(op::locate(with_bytes)).await
}

/// Refuses bytes that are not the ones the metadata records.
fn verify(meta: &SnapshotMeta, bytes: &[u8], actual: &str) -> Result<(), DomainError> {
    if actual == meta.sha256 && u64::try_from(bytes.len()).ok() == Some(meta.size) {
        return Ok(());
    }
    Err(DomainError::Storage(format!(
        "{CORRUPT}: snapshot version {} is corrupt: its bytes hash to {actual} ({} bytes), the \
         metadata records {} ({} bytes); refusing to serve them",
        meta.version,
        bytes.len(),
        meta.sha256,
        meta.size
    )))
}

/// How a deletion ages the chunks it leaves unnamed.
#[derive(Debug, Clone, Copy)]
pub struct Aging {
    /// How long they stay readable (ms).
    pub grace_ms: i64,
    /// Collection claims made before this (ms) were abandoned.
    pub stale_before: i64,
}

/// Deletes the current snapshot and its KV key, then collects the chunks
/// nothing names any more whose grace has passed.
pub async fn delete(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    aging: Aging,
) -> Result<(), DomainError> {
    if let Some(key) = object.run(op::remove(aging.grace_ms)).await? {
        // Once the metadata is gone a leftover key is an orphan the sweep
        // removes; report the failure all the same.
        blobs.delete(&key).await?;
    }
    // A failure leaves them to the next collection.
    let _ = chunk_store::saga::collect(object, blobs, key_prefix, aging.stale_before).await;
    Ok(())
}

/// Deletes the KV keys under `prefix` that neither the metadata nor a put in
/// flight names (left by a crash between a KV write and the metadata
/// switch, or before a superseded key was deleted), then collects the
/// chunks nothing names. Returns how many went.
pub async fn sweep(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    prefix: &str,
    stale_before: i64,
) -> Result<u32, DomainError> {
    let removed = sweep_orphans(object, blobs, prefix).await?;
    let collected =
        chunk_store::saga::collect_all(object, blobs, prefix, stale_before, 1_000).await?;
    Ok(removed.saturating_add(u32::try_from(collected).unwrap_or(u32::MAX)))
}

/// The listing half of [`sweep`]: the KV keys under `prefix` with no row
/// and no put in flight naming them go
/// ([`crate::chunk_store::saga::sweep_listing`]).
pub async fn sweep_orphans(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    prefix: &str,
) -> Result<u32, DomainError> {
    let in_use = object.run(op::keys_in_use()).await?;
    chunk_store::saga::sweep_listing(object, blobs, prefix, &in_use).await
}

/// Removes the snapshot rows and then every KV key they named, and
/// collects the agent's chunks (up to `max_steps` collection steps; later
/// sweeps take the rest).
pub async fn wipe(
    object: &impl SnapshotObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    stale_before: i64,
    max_steps: u32,
) -> Result<(), DomainError> {
    for key in object.run(op::wipe()).await? {
        blobs.delete(&key).await?;
    }
    chunk_store::saga::collect_all(object, blobs, key_prefix, stale_before, max_steps)
        .await
        .map(drop)
}
