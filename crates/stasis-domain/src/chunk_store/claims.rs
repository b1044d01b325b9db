//! Who may touch a chunk's KV key: an upload or a collection, never both.
//!
//! A chunk's row goes `uploading` (an upload claimed the name and is
//! writing its key) → `stored` (KV holds it; a manifest may name it) →
//! `deleting` (one collection claimed it and is deleting its key) → no row.
//! The claims are what keeps a collection from deleting a key an upload
//! has just written, so that a committed manifest never names a missing
//! chunk:
//! - an upload claims the name before its bytes become visible under the
//!   key, and records it only after; a collection takes only `stored` rows
//!   no manifest names (past their grace) and abandoned `uploading` rows;
//! - a `deleting` row belongs to the one collection that took it (its
//!   claim time is its mark): no other collection takes it, and an upload
//!   meeting it waits until that collection is done ([`Claim::Busy`]);
//! - a claim made before `stale_before` (the runtime's start on the host,
//!   a lease on the edge) belongs to a collection that died: the next
//!   collection or upload takes it over, so a crash never blocks an upload.
//!
//! Rows marked `gone` by an older version of this table read as no row.

use super::{
    digest::{self, ChunkHash},
    table::{DELETING, STORED, UPLOADING, distinct, each_batch, hash_of, keep_until},
};
use crate::{
    DomainError, Refusal, params,
    sql::{RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// Left by an older version of this table; reads as no row.
const GONE: &str = "gone";

/// What an upload may do with a chunk it claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// Write the key, then record it.
    Write,
    /// The store holds it already (kept for the pending time): nothing to
    /// write.
    Held,
    /// A collection is deleting its key right now: ask again shortly.
    Busy,
}

/// The clock of a claim.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    /// Now (ms).
    pub now_ms: i64,
    /// Until when a claimed or recorded chunk no manifest names is kept.
    pub pending_until: i64,
    /// Collection claims made before this were abandoned.
    pub stale_before: i64,
}

impl Times {
    /// The clock of a claim made at `now`, whose chunks no manifest names
    /// are kept `pending_ttl_ms`.
    pub fn at(now: i64, pending_ttl_ms: i64, stale_before: i64) -> Self {
        Self {
            now_ms: now,
            pending_until: now.saturating_add(pending_ttl_ms),
            stale_before,
        }
    }
}

/// Each chunk's state and when it last changed.
fn states(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
) -> Result<HashMap<ChunkHash, (String, i64)>, DomainError> {
    let mut found = HashMap::new();
    each_batch(
        store,
        "SELECT hash, state, changed_at FROM snapshot_chunks WHERE hash IN ({in})",
        &[],
        hashes,
        |row| {
            found.insert(hash_of(row, 0)?, (row.text(1)?.to_owned(), row.int(2)?));
            Ok(())
        },
    )?;
    Ok(found)
}

/// Claims `hashes` for an upload, answering for each what it may do.
pub fn claim_uploads(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    times: &Times,
) -> Result<Vec<Claim>, DomainError> {
    let wanted = distinct(hashes);
    let found = states(store, &wanted)?;
    let mut claims = HashMap::with_capacity(wanted.len());
    for hash in &wanted {
        let claim = match found.get(hash) {
            Some((state, _)) if state == STORED => Claim::Held,
            Some((state, changed_at)) if state == DELETING && *changed_at >= times.stale_before => {
                Claim::Busy
            }
            Some((state, _)) if state == UPLOADING => Claim::Write,
            // No row, an old tombstone, or a collection's abandoned claim.
            _ => {
                store.run(
                    "INSERT OR REPLACE INTO snapshot_chunks
                        (hash, size, state, refs, pending_until, changed_at)
                     VALUES (?1, 0, ?2, 0, ?3, ?4)",
                    params![hash.to_vec(), UPLOADING, times.pending_until, times.now_ms],
                )?;
                // Its key is written in this folder: whatever it was
                // adopted from before, it has no origin now.
                super::origins::forget(store, std::slice::from_ref(hash))?;
                Claim::Write
            }
        };
        claims.insert(*hash, claim);
    }
    let keep: Vec<ChunkHash> = claims
        .iter()
        .filter(|(_, claim)| **claim != Claim::Busy)
        .map(|(hash, _)| *hash)
        .collect();
    keep_until(store, &keep, times.pending_until)?;
    Ok(hashes
        .iter()
        .map(|hash| claims.get(hash).copied().unwrap_or(Claim::Busy))
        .collect())
}

/// Records chunks an upload claimed and KV now holds; returns, for each,
/// whether the store lacked it. A chunk whose claim was lost (taken over
/// as abandoned, after the pending time) is refused with a 503.
pub fn record(
    store: &impl SqlStore,
    chunks: &[(ChunkHash, u64)],
    times: &Times,
) -> Result<Vec<bool>, DomainError> {
    let hashes: Vec<ChunkHash> = chunks.iter().map(|(hash, _)| *hash).collect();
    let found = states(store, &distinct(&hashes))?;
    let mut recorded = HashSet::new();
    let mut fresh = Vec::with_capacity(chunks.len());
    for (hash, size) in chunks {
        let state = found.get(hash).map(|(state, _)| state.as_str());
        match state {
            Some(UPLOADING) if !recorded.contains(hash) => {
                store.run(
                    "UPDATE snapshot_chunks SET state = ?2, size = ?3,
                        pending_until = MAX(pending_until, ?4), changed_at = ?5
                     WHERE hash = ?1",
                    params![
                        hash.to_vec(),
                        STORED,
                        *size,
                        times.pending_until,
                        times.now_ms
                    ],
                )?;
                recorded.insert(*hash);
                fresh.push(true);
            }
            Some(UPLOADING | STORED) => fresh.push(false),
            _ => return Err(claim_lost(hash)),
        }
    }
    keep_until(store, &hashes, times.pending_until)?;
    Ok(fresh)
}

fn claim_lost(hash: &ChunkHash) -> DomainError {
    DomainError::Unavailable(Refusal::new(
        "chunk_being_collected",
        format!(
            "chunk {} was collected while its upload lasted past the pending time; upload it \
             again",
            digest::to_hex(hash)
        ),
    ))
}

/// A collection's claim: the chunks it took, and its mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taken<H> {
    /// The chunks whose keys it deletes.
    pub chunks: Vec<H>,
    /// When it took them: [`collect_done`] releases only rows still so
    /// marked.
    pub claim_at: i64,
}

/// What [`collect_take`] asks, one query per kind of row (`?1` the time
/// before which it is due, `?2` the most rows): stored chunks no version
/// names, uploads abandoned, claims of collections that died. Each is the
/// WHERE of its partial index (`table::STATEMENTS`) spelled with literals,
/// so that each reads a range of its index rather than every chunk.
pub const COLLECT_QUERIES: [&str; 3] = [
    "SELECT hash FROM snapshot_chunks
     WHERE refs = 0 AND state = 'stored' AND pending_until < ?1 LIMIT ?2",
    "SELECT hash FROM snapshot_chunks WHERE state = 'uploading' AND pending_until < ?1 LIMIT ?2",
    "SELECT hash FROM snapshot_chunks WHERE state = 'deleting' AND changed_at < ?1 LIMIT ?2",
];

/// Takes up to `limit` chunks to delete: stored ones no manifest names
/// whose pending time (or grace) has passed, uploads abandoned past theirs,
/// and claims of collections that died. They are `deleting` from here on,
/// this collection's alone.
pub fn collect_take(
    store: &impl SqlStore,
    times: &Times,
    limit: usize,
) -> Result<Taken<ChunkHash>, DomainError> {
    let kinds = [
        (COLLECT_QUERIES[0], times.now_ms),
        (COLLECT_QUERIES[1], times.now_ms),
        (COLLECT_QUERIES[2], times.stale_before.min(times.now_ms)),
    ];
    let mut taken = Vec::new();
    for (query, before) in kinds {
        let left = limit.saturating_sub(taken.len());
        if left == 0 {
            break;
        }
        let left = i64::try_from(left).unwrap_or(i64::MAX);
        for row in store.execute(query, params![before, left])? {
            taken.push(hash_of(&row, 0)?);
        }
    }
    mark_deleting(store, &taken, times.now_ms)?;
    Ok(Taken {
        chunks: taken,
        claim_at: times.now_ms,
    })
}

fn mark_deleting(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    now_ms: i64,
) -> Result<(), DomainError> {
    each_batch(
        store,
        "UPDATE snapshot_chunks SET state = ?1, changed_at = ?2 WHERE hash IN ({in})",
        &[SqlValue::from(DELETING), SqlValue::from(now_ms)],
        hashes,
        |_| Ok(()),
    )
}

/// The KV keys of a collection's chunks are deleted: their rows go, those
/// still marked with its claim (a row another collection took over since
/// is that one's).
pub fn collect_done(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    claim_at: i64,
) -> Result<(), DomainError> {
    each_batch(
        store,
        "DELETE FROM snapshot_chunks WHERE state = ?1 AND changed_at = ?2 AND hash IN ({in})",
        &[SqlValue::from(DELETING), SqlValue::from(claim_at)],
        hashes,
        |_| Ok(()),
    )?;
    store.run(
        "DELETE FROM snapshot_chunks WHERE state = ?1",
        params![GONE],
    )?;
    // An adopted chunk's row went; its origin's key was never touched.
    super::origins::forget(store, hashes)
}

/// Of chunk keys found in KV, takes for deletion those no row claims (a
/// crash between a key's write and its row's, in an older version, or a
/// key a deletion missed). Every upload claims its row before it writes,
/// so no upload in flight is among them.
pub fn claim_orphans(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    now_ms: i64,
) -> Result<Taken<ChunkHash>, DomainError> {
    let wanted = distinct(hashes);
    let found = states(store, &wanted)?;
    let orphans: Vec<ChunkHash> = wanted
        .into_iter()
        .filter(|h| found.get(h).is_none_or(|(state, _)| state == GONE))
        .collect();
    for hash in &orphans {
        store.run(
            "INSERT OR REPLACE INTO snapshot_chunks
                (hash, size, state, refs, pending_until, changed_at)
             VALUES (?1, 0, ?2, 0, 0, ?3)",
            params![hash.to_vec(), DELETING, now_ms],
        )?;
    }
    super::origins::forget(store, &orphans)?;
    Ok(Taken {
        chunks: orphans,
        claim_at: now_ms,
    })
}
