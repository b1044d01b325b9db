//! The agent object's record of its chunks: which ones KV holds, how many
//! manifests name each, and which a collection is deleting.
//!
//! A chunk's row goes `stored` (KV holds it) → `deleting` (a collection
//! took it; its KV key is being deleted) → `gone` (a tombstone, kept an
//! hour). An upload records its chunk only after KV holds it; a record
//! that meets `deleting`, or a tombstone newer than the upload, is refused
//! with a 503, since the collection's KV delete may have landed after the
//! upload's write. Which chunks exist is answered from this table alone,
//! never from KV.

use super::{
    PENDING_CHUNK_TTL_MS,
    digest::{self, ChunkHash},
};
use crate::{
    DomainError, Refusal, params,
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

/// Bound parameters per statement (Durable Objects allow 100).
const BATCH: usize = 90;

const STORED: &str = "stored";
const DELETING: &str = "deleting";
const GONE: &str = "gone";

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
fn each_batch(
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

fn hash_of(row: &crate::sql::Row, index: usize) -> Result<ChunkHash, DomainError> {
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

/// When an upload is recorded.
pub struct Times {
    /// When the upload began (ms).
    pub started_at: i64,
    /// Now (ms).
    pub now_ms: i64,
    /// Until when its chunks are kept while no manifest names them.
    pub pending_until: i64,
    /// How far `started_at`'s clock may lag this object's: an upload is
    /// recorded over a tombstone only when it began this much after it.
    pub clock_slack_ms: i64,
}

/// Records chunks KV now holds; returns, for each, whether it was new.
/// Refuses (503) a chunk a collection is deleting or deleted after the
/// upload began.
pub fn record(
    store: &impl SqlStore,
    chunks: &[(ChunkHash, u64)],
    times: &Times,
) -> Result<Vec<bool>, DomainError> {
    let Times {
        started_at,
        now_ms,
        pending_until,
        clock_slack_ms,
    } = *times;
    let mut fresh = Vec::with_capacity(chunks.len());
    for (hash, size) in chunks {
        let row = store.first_row(
            "SELECT state, changed_at FROM snapshot_chunks WHERE hash = ?1",
            params![hash.to_vec()],
        )?;
        let state = match &row {
            Some(row) => Some((row.text(0)?.to_owned(), row.int(1)?)),
            None => None,
        };
        match state {
            Some((state, _)) if state == STORED => {
                store.run(
                    "UPDATE snapshot_chunks SET pending_until = MAX(pending_until, ?2)
                     WHERE hash = ?1",
                    params![hash.to_vec(), pending_until],
                )?;
                fresh.push(false);
            }
            Some((state, changed_at))
                if state == DELETING || changed_at.saturating_add(clock_slack_ms) >= started_at =>
            {
                return Err(being_collected(hash));
            }
            _ => {
                store.run(
                    "INSERT OR REPLACE INTO snapshot_chunks
                        (hash, size, state, refs, pending_until, changed_at)
                     VALUES (?1, ?2, ?3, 0, ?4, ?5)",
                    params![hash.to_vec(), *size, STORED, pending_until, now_ms],
                )?;
                fresh.push(true);
            }
        }
    }
    Ok(fresh)
}

fn being_collected(hash: &ChunkHash) -> DomainError {
    DomainError::Unavailable(Refusal::new(
        "chunk_being_collected",
        format!(
            "chunk {} is being collected as garbage right now; upload it again shortly",
            digest::to_hex(hash)
        ),
    ))
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

/// Drops a manifest row, if any, and its references.
pub fn drop_manifest(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
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
    adjust_refs(store, &distinct(&hashes), -1)
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
        drop_manifest(store, version)?;
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

/// Takes up to `limit` chunks to delete: those a crashed collection left
/// `deleting`, then stored ones no manifest names whose upload hour has
/// passed. They are `deleting` from here on.
pub fn collect_take(
    store: &impl SqlStore,
    now_ms: i64,
    limit: usize,
) -> Result<Vec<ChunkHash>, DomainError> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = store.execute(
        "SELECT hash FROM snapshot_chunks
         WHERE state = ?1 OR (refs = 0 AND state = ?2 AND pending_until < ?3)
         LIMIT ?4",
        params![DELETING, STORED, now_ms, limit],
    )?;
    let taken = rows
        .iter()
        .map(|row| hash_of(row, 0))
        .collect::<Result<Vec<_>, _>>()?;
    each_batch(
        store,
        "UPDATE snapshot_chunks SET state = ?1, changed_at = ?2 WHERE hash IN ({in})",
        &[SqlValue::from(DELETING), SqlValue::from(now_ms)],
        &taken,
        |_| Ok(()),
    )?;
    Ok(taken)
}

/// Marks chunks whose KV keys are deleted as gone, and forgets tombstones
/// older than the pending hour.
pub fn collect_done(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    now_ms: i64,
) -> Result<(), DomainError> {
    each_batch(
        store,
        "UPDATE snapshot_chunks SET state = ?1, changed_at = ?2
         WHERE state = ?3 AND hash IN ({in})",
        &[
            SqlValue::from(GONE),
            SqlValue::from(now_ms),
            SqlValue::from(DELETING),
        ],
        hashes,
        |_| Ok(()),
    )?;
    store.run(
        "DELETE FROM snapshot_chunks WHERE state = ?1 AND changed_at < ?2",
        params![GONE, now_ms.saturating_sub(PENDING_CHUNK_TTL_MS)],
    )?;
    Ok(())
}

/// Of chunk keys found in KV, takes for deletion those the table has no
/// live row for: none at all, or a tombstone (left by a crash between an
/// upload's KV write and its record).
pub fn claim_orphans(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    now_ms: i64,
) -> Result<Vec<ChunkHash>, DomainError> {
    let mut known = HashSet::new();
    each_batch(
        store,
        "SELECT hash FROM snapshot_chunks WHERE state != ?1 AND hash IN ({in})",
        &[SqlValue::from(GONE)],
        hashes,
        |row| {
            known.insert(hash_of(row, 0)?);
            Ok(())
        },
    )?;
    let orphans: Vec<ChunkHash> = distinct(hashes)
        .into_iter()
        .filter(|h| !known.contains(h))
        .collect();
    for hash in &orphans {
        store.run(
            "INSERT OR REPLACE INTO snapshot_chunks
                (hash, size, state, refs, pending_until, changed_at)
             VALUES (?1, 0, ?2, 0, 0, ?3)",
            params![hash.to_vec(), DELETING, now_ms],
        )?;
    }
    Ok(orphans)
}

/// Every chunk goes to collection at once (the agent is destroyed).
pub fn release_all(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run(
        "UPDATE snapshot_chunks SET refs = 0, pending_until = 0",
        Vec::new(),
    )?;
    Ok(())
}
