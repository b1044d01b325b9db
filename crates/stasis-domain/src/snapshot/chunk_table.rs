//! The agent object's record of its chunks: which ones KV holds, how many
//! manifests name each, and the manifests themselves. Which chunks exist is
//! answered from this table alone, never from KV; who may write or delete a
//! chunk's key is [`super::chunk_claims`]'.

use super::digest::{self, ChunkHash};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore, SqlValue},
};
use std::collections::{HashMap, HashSet};

/// The tables: chunk rows, and the manifests (the current one, and an
/// import's, staged or being written) by version.
pub(super) const STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS snapshot_chunks (
        hash BLOB PRIMARY KEY,
        size INTEGER NOT NULL,
        state TEXT NOT NULL,
        refs INTEGER NOT NULL,
        pending_until INTEGER NOT NULL,
        changed_at INTEGER NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS snapshot_chunks_by_refs
        ON snapshot_chunks (refs, state, pending_until)",
    "CREATE TABLE IF NOT EXISTS snapshot_manifests (
        version INTEGER PRIMARY KEY,
        chunk_size INTEGER NOT NULL,
        hashes BLOB NOT NULL
    )",
    // Manifests whose whole-file sha256 this server computed over exactly
    // their chunks' bytes (a whole-file PUT). A table of its own, so that
    // a database from before it reads every manifest as not so marked.
    "CREATE TABLE IF NOT EXISTS snapshot_hashed_manifests (
        version INTEGER PRIMARY KEY
    )",
];

/// A chunk's states (see [`super::chunk_claims`]).
pub(super) const UPLOADING: &str = "uploading";
pub(super) const STORED: &str = "stored";
pub(super) const DELETING: &str = "deleting";

/// Bound parameters per statement (Durable Objects allow 100).
const BATCH: usize = 90;

/// Parses hex names, refusing a malformed one with `code`.
pub fn parse_all(hashes: &[String], code: &str) -> Result<Vec<ChunkHash>, DomainError> {
    hashes
        .iter()
        .map(|hex| {
            digest::from_hex(hex).ok_or_else(|| {
                DomainError::invalid(code, format!("{hex:?} is not a sha256 (64 hex digits)"))
            })
        })
        .collect()
}

/// `hashes` once each, in first-seen order.
pub fn distinct(hashes: &[ChunkHash]) -> Vec<ChunkHash> {
    let mut seen = HashSet::with_capacity(hashes.len());
    hashes.iter().copied().filter(|h| seen.insert(*h)).collect()
}

/// Runs `statement` (whose `{in}` is replaced by a list of placeholders
/// after `leading` other parameters) over `hashes`, a batch at a time.
pub(super) fn each_batch(
    store: &impl SqlStore,
    statement: &str,
    leading: &[SqlValue],
    hashes: &[ChunkHash],
    mut row: impl FnMut(&crate::sql::Row) -> Result<(), DomainError>,
) -> Result<(), DomainError> {
    for batch in hashes.chunks(BATCH) {
        let first = leading.len() + 1;
        let marks: Vec<String> = (first..first + batch.len())
            .map(|n| format!("?{n}"))
            .collect();
        let sql = statement.replace("{in}", &marks.join(", "));
        let mut values = leading.to_vec();
        values.extend(batch.iter().map(|h| SqlValue::Blob(h.to_vec())));
        for found in store.execute(&sql, values)? {
            row(&found)?;
        }
    }
    Ok(())
}

pub(super) fn hash_of(row: &crate::sql::Row, index: usize) -> Result<ChunkHash, DomainError> {
    ChunkHash::try_from(row.blob(index)?)
        .map_err(|_| DomainError::Storage("a chunk row's hash is not 32 bytes".into()))
}

/// The recorded size of every stored chunk among `hashes`.
pub fn stored_sizes(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
) -> Result<HashMap<ChunkHash, u64>, DomainError> {
    let mut sizes = HashMap::new();
    each_batch(
        store,
        "SELECT hash, size FROM snapshot_chunks WHERE state = ?1 AND hash IN ({in})",
        &[SqlValue::from(STORED)],
        hashes,
        |row| {
            sizes.insert(hash_of(row, 0)?, row.uint(1)?);
            Ok(())
        },
    )?;
    Ok(sizes)
}

/// The ones of `hashes` the store does not hold, once each, in order. The
/// ones it holds are kept until `pending_until` even if no manifest names
/// them: the asker is about to commit a manifest that does.
pub fn missing(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    pending_until: i64,
) -> Result<Vec<ChunkHash>, DomainError> {
    let wanted = distinct(hashes);
    let held = stored_sizes(store, &wanted)?;
    let held_list: Vec<ChunkHash> = held.keys().copied().collect();
    each_batch(
        store,
        "UPDATE snapshot_chunks SET pending_until = MAX(pending_until, ?1)
         WHERE hash IN ({in})",
        &[SqlValue::from(pending_until)],
        &held_list,
        |_| Ok(()),
    )?;
    Ok(wanted
        .into_iter()
        .filter(|h| !held.contains_key(h))
        .collect())
}

/// The size of a chunk the store holds.
pub fn stored_size(store: &impl SqlStore, hash: &ChunkHash) -> Result<Option<u64>, DomainError> {
    Ok(stored_sizes(store, &[*hash])?.get(hash).copied())
}

/// Adds a manifest row and counts one more reference to each chunk it
/// names.
pub fn add_manifest(
    store: &impl SqlStore,
    version: u64,
    chunk_size: u64,
    hashes: &[ChunkHash],
) -> Result<(), DomainError> {
    store.run(
        "INSERT OR REPLACE INTO snapshot_manifests (version, chunk_size, hashes) VALUES (?1, ?2, ?3)",
        params![version, chunk_size, hashes.concat()],
    )?;
    reference(store, &distinct(hashes))
}

/// Counts one more reference to each of `hashes` (distinct ones).
pub fn reference(store: &impl SqlStore, hashes: &[ChunkHash]) -> Result<(), DomainError> {
    // A committed chunk is no longer an upload in progress: once no
    // manifest names it, it may be collected at once.
    each_batch(
        store,
        "UPDATE snapshot_chunks SET refs = refs + 1, pending_until = 0 WHERE hash IN ({in})",
        &[],
        hashes,
        |_| Ok(()),
    )
}

/// Drops a manifest row, if any, and its references; the chunks no
/// manifest names any more stay readable until `readable_until` (a reader
/// of the dropped version may still be reading them).
pub fn drop_manifest(
    store: &impl SqlStore,
    version: u64,
    readable_until: i64,
) -> Result<(), DomainError> {
    let Some((_, hashes)) = manifest(store, version)? else {
        return Ok(());
    };
    store.run(
        "DELETE FROM snapshot_manifests WHERE version = ?1",
        params![version],
    )?;
    store.run(
        "DELETE FROM snapshot_hashed_manifests WHERE version = ?1",
        params![version],
    )?;
    let named = distinct(&hashes);
    adjust_refs(store, &named, -1)?;
    keep_until(store, &named, readable_until)
}

/// Marks a version's manifest as one whose whole-file sha256 this server
/// computed over its chunks' bytes.
pub fn mark_hashed(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
    store.run(
        "INSERT OR REPLACE INTO snapshot_hashed_manifests (version) VALUES (?1)",
        params![version],
    )?;
    Ok(())
}

/// Whether [`mark_hashed`] marked the version's manifest.
pub fn is_hashed(store: &impl SqlStore, version: u64) -> Result<bool, DomainError> {
    Ok(store
        .first_row(
            "SELECT 1 FROM snapshot_hashed_manifests WHERE version = ?1",
            params![version],
        )?
        .is_some())
}

/// Drops every manifest row (the agent is destroyed or replaced).
pub fn drop_all_manifests(store: &impl SqlStore) -> Result<(), DomainError> {
    let versions: Vec<u64> = store
        .execute("SELECT version FROM snapshot_manifests", Vec::new())?
        .iter()
        .map(|row| row.uint(0))
        .collect::<Result<_, _>>()?;
    for version in versions {
        drop_manifest(store, version, 0)?;
    }
    Ok(())
}

fn adjust_refs(store: &impl SqlStore, hashes: &[ChunkHash], delta: i64) -> Result<(), DomainError> {
    each_batch(
        store,
        "UPDATE snapshot_chunks SET refs = MAX(0, refs + ?1) WHERE hash IN ({in})",
        &[SqlValue::from(delta)],
        hashes,
        |_| Ok(()),
    )
}

/// A version's manifest: its chunk size and chunk hashes.
pub fn manifest(
    store: &impl SqlStore,
    version: u64,
) -> Result<Option<(u64, Vec<ChunkHash>)>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT chunk_size, hashes FROM snapshot_manifests WHERE version = ?1",
        params![version],
    )?
    else {
        return Ok(None);
    };
    // An empty blob may come back as NULL from some SQL stores.
    let blob = row.blob(1).unwrap_or_default();
    let hashes = blob
        .chunks_exact(32)
        .map(|raw| ChunkHash::try_from(raw).unwrap_or([0; 32]))
        .collect();
    Ok(Some((row.uint(0)?, hashes)))
}

/// Every chunk goes to collection at once (the agent is destroyed).
pub fn release_all(store: &impl SqlStore) -> Result<(), DomainError> {
    // An upload in flight keeps its claim: its row goes once abandoned.
    store.run(
        "UPDATE snapshot_chunks SET refs = 0, pending_until = 0 WHERE state = ?1",
        params![STORED],
    )?;
    Ok(())
}

/// Keeps `hashes` from collection until at least `until` (a push about to
/// commit, or a superseded version's readers).
pub fn keep_until(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    until: i64,
) -> Result<(), DomainError> {
    each_batch(
        store,
        "UPDATE snapshot_chunks SET pending_until = MAX(pending_until, ?1)
         WHERE state IN ('uploading', 'stored') AND hash IN ({in})",
        &[SqlValue::from(until)],
        hashes,
        |_| Ok(()),
    )
}
