//! An import's snapshot written as chunks while its `data_base64` streams
//! in: a manifest grows under a reserved version as each batch of chunks
//! is recorded, and names them (one reference each), so no collection
//! takes them however long the import lasts. Once the snapshot is whole,
//! the import's staged row owns the manifest ([`super::staged`]) and its
//! commit switches to it.
//!
//! A manifest being written is marked in `snapshot_importing` until then.
//! The mark goes with the import (abort, the next `Begin`, a refusal that
//! abandons the version) or, for an import whose process died, once it was
//! not touched for the pending time (a sweep's `KeysInUse`): its manifest
//! is dropped, and its chunks are collected like any others nothing names.

use super::KILO_DB;
use crate::{
    DomainError, Refusal,
    chunk_store::{
        claims::{self, Times},
        digest::ChunkHash,
    },
    params,
    sql::{RowExt, SqlStore},
};

/// The marks of manifests being written by an import.
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS snapshot_importing (
    version INTEGER PRIMARY KEY,
    expires_at INTEGER NOT NULL
)";

/// Reserves a version for an import's chunked snapshot: an empty manifest
/// of `chunk_size`, marked as being written until `expires_at`.
pub fn reserve(
    store: &impl SqlStore,
    chunk_size: u64,
    expires_at: i64,
) -> Result<u64, DomainError> {
    let version = KILO_DB.next_version(store)?;
    KILO_DB.add_manifest(store, version, chunk_size, &[])?;
    store.run(
        "INSERT INTO snapshot_importing (version, expires_at) VALUES (?1, ?2)",
        params![version, expires_at],
    )?;
    Ok(version)
}

/// Records chunks an upload claimed and KV now holds, and appends them to
/// import manifest `version`, each named once by it; the mark is kept for
/// the pending time. Refused (409 `import_superseded`) once the mark went:
/// the import ended.
pub fn record(
    store: &impl SqlStore,
    version: u64,
    chunks: &[(ChunkHash, u64)],
    times: &Times,
) -> Result<Vec<bool>, DomainError> {
    if !is_marked(store, version)? {
        return Err(superseded(version));
    }
    let expires_at = times.pending_until;
    let fresh = claims::record(store, chunks, times)?;
    let batch: Vec<ChunkHash> = chunks.iter().map(|(hash, _)| *hash).collect();
    KILO_DB
        .append(store, version, &batch)?
        .ok_or_else(|| superseded(version))?;
    store.run(
        "UPDATE snapshot_importing SET expires_at = ?2 WHERE version = ?1",
        params![version, expires_at],
    )?;
    Ok(fresh)
}

/// The import's snapshot is whole: the staged row takes the manifest over
/// from the mark. Refuses a manifest that does not hold `count` chunks.
pub fn release(store: &impl SqlStore, version: u64, count: u64) -> Result<u64, DomainError> {
    if !is_marked(store, version)? {
        return Err(superseded(version));
    }
    let (chunk_size, hashes) = KILO_DB
        .manifest(store, version)?
        .ok_or_else(|| superseded(version))?;
    if u64::try_from(hashes.len()).ok() != Some(count) {
        return Err(DomainError::Storage(format!(
            "import snapshot version {version} names {} chunks, not {count}",
            hashes.len()
        )));
    }
    unmark(store, version)?;
    Ok(chunk_size)
}

/// Drops import manifest `version` if it is still being written (a refused
/// or superseded import); a manifest staged or current is left alone.
pub fn abandon(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
    if is_marked(store, version)? {
        unmark(store, version)?;
        KILO_DB.drop_manifest(store, version, 0)?;
    }
    Ok(())
}

/// Drops every manifest an import is writing (an import begins, ends or
/// is aborted, or the agent is wiped).
pub fn abandon_all(store: &impl SqlStore) -> Result<(), DomainError> {
    for version in marked(store, "SELECT version FROM snapshot_importing", Vec::new())? {
        abandon(store, version)?;
    }
    Ok(())
}

/// Drops the manifests of imports not heard from since their mark expired
/// (the process writing them died).
pub fn expire(store: &impl SqlStore, now_ms: i64) -> Result<(), DomainError> {
    let stale = marked(
        store,
        "SELECT version FROM snapshot_importing WHERE expires_at < ?1",
        params![now_ms],
    )?;
    for version in stale {
        abandon(store, version)?;
    }
    Ok(())
}

fn marked(
    store: &impl SqlStore,
    query: &str,
    params: Vec<crate::sql::SqlValue>,
) -> Result<Vec<u64>, DomainError> {
    let mut versions = Vec::new();
    for row in store.execute(query, params)? {
        versions.push(row.uint(0)?);
    }
    Ok(versions)
}

fn is_marked(store: &impl SqlStore, version: u64) -> Result<bool, DomainError> {
    Ok(store
        .first_row(
            "SELECT 1 FROM snapshot_importing WHERE version = ?1",
            params![version],
        )?
        .is_some())
}

fn unmark(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
    store.run(
        "DELETE FROM snapshot_importing WHERE version = ?1",
        params![version],
    )?;
    Ok(())
}

fn superseded(version: u64) -> DomainError {
    DomainError::Conflict(Refusal::new(
        "import_superseded",
        format!(
            "the import writing snapshot version {version} is no longer in progress: another \
             import of the agent began, or it was aborted; nothing of it was applied"
        ),
    ))
}
