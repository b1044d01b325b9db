//! The agent object's record of its chunks: which ones KV holds, and how
//! many versions (of any owner) name each. Which chunks exist is answered
//! from this table alone, never from KV; who may write or delete a chunk's
//! key is [`super::claims`]'; which versions name which chunks is each
//! owner's manifest table ([`super::manifests`]).

use super::digest::{self, ChunkHash};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore, SqlValue},
};
use std::collections::{HashMap, HashSet};

/// The chunk rows, one per chunk of the agent whoever names it. The table
/// keeps the name it had when kilo.db snapshots were its only owner: a
/// deployed object's rows are read as they are.
pub(super) const STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS snapshot_chunks (
        hash BLOB PRIMARY KEY,
        size INTEGER NOT NULL,
        state TEXT NOT NULL,
        refs INTEGER NOT NULL,
        pending_until INTEGER NOT NULL,
        changed_at INTEGER NOT NULL
    )",
    // Collection looks for the rows below only, so each has a partial
    // index holding just them: a reference counted on a named chunk (a
    // commit names every chunk of its version) changes no index at all.
    // The index of the first layout held every row and served no query.
    "DROP INDEX IF EXISTS snapshot_chunks_by_refs",
    "CREATE INDEX IF NOT EXISTS snapshot_chunks_unnamed
        ON snapshot_chunks (pending_until) WHERE refs = 0 AND state = 'stored'",
    "CREATE INDEX IF NOT EXISTS snapshot_chunks_uploading
        ON snapshot_chunks (pending_until) WHERE state = 'uploading'",
    "CREATE INDEX IF NOT EXISTS snapshot_chunks_deleting
        ON snapshot_chunks (changed_at) WHERE state = 'deleting'",
];

/// A chunk's states (see [`super::claims`]).
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

/// Hex names with their sizes, parsed (a malformed name: 400
/// `invalid_id`).
pub fn parse_sized(chunks: &[(String, u64)]) -> Result<Vec<(ChunkHash, u64)>, DomainError> {
    let mut parsed = Vec::with_capacity(chunks.len());
    for (hex, size) in chunks {
        let hash = parse_all(std::slice::from_ref(hex), "invalid_id")?;
        parsed.extend(hash.into_iter().map(|h| (h, *size)));
    }
    Ok(parsed)
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
    sizes_from(
        store,
        "SELECT hash, size FROM snapshot_chunks WHERE state = ?1 AND hash IN ({in})",
        hashes,
    )
}

/// The `hash, size` rows `statement` answers over `hashes` (its `?1` is
/// the `stored` state, its `{in}` the batch).
fn sizes_from(
    store: &impl SqlStore,
    statement: &str,
    hashes: &[ChunkHash],
) -> Result<HashMap<ChunkHash, u64>, DomainError> {
    let mut sizes = HashMap::with_capacity(hashes.len());
    each_batch(store, statement, &[SqlValue::from(STORED)], hashes, |row| {
        sizes.insert(hash_of(row, 0)?, row.uint(1)?);
        Ok(())
    })?;
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

/// Counts one more reference to each of `hashes` (distinct ones) that the
/// store holds, and answers the stored size of each one counted: the
/// check and the count in one statement per batch.
pub fn reference_stored(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
) -> Result<HashMap<ChunkHash, u64>, DomainError> {
    sizes_from(
        store,
        "UPDATE snapshot_chunks SET refs = refs + 1, pending_until = 0
         WHERE state = ?1 AND hash IN ({in}) RETURNING hash, size",
        hashes,
    )
}

/// Counts one reference less to each of `hashes` (distinct ones: a
/// version stopped naming them); the chunks no version names any more stay
/// readable until `readable_until` (a reader of that version may still be
/// reading them).
pub fn release(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    readable_until: i64,
) -> Result<(), DomainError> {
    adjust_refs(store, hashes, -1)?;
    keep_until(store, hashes, readable_until)
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

/// Every chunk of the agent goes to collection at once, whichever owner
/// named it (the agent is destroyed or replaced: every owner's versions
/// went).
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
