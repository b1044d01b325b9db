//! Holds: the chunks of this agent that a fork names. A fork copies no
//! chunk bytes, so the agent whose folder holds a key (its *origin*, see
//! [`super::origins`]) must keep it while the fork lives: each fork holds,
//! in each origin it takes chunks from, the chunks it took, counted once
//! each in the chunk table ([`super::table`]) like one more version. So
//! neither retention (which drops versions, not holds) nor collection
//! takes them, and a wipe of the origin (its destroy) keeps exactly the
//! rows and keys its holds name ([`reference_held`]) until the last hold
//! is released by its fork's destroy.

use super::{
    digest::ChunkHash,
    manifests,
    table::{self, distinct},
};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};

pub(super) const STATEMENTS: &[&str] = &["CREATE TABLE IF NOT EXISTS fork_holds (
        holder TEXT NOT NULL,
        part INTEGER NOT NULL,
        hashes BLOB NOT NULL,
        PRIMARY KEY (holder, part)
    )"];

/// Hashes per row (a Durable Object row holds about 60,000).
const PART_HASHES: usize = 20_000;

/// `holder` (the fork, `rig/agent`) holds `hashes`, which this store must
/// hold (else 409 `chunks_missing` and nothing changes); a hold the holder
/// had is replaced.
pub fn hold(store: &impl SqlStore, holder: &str, hashes: &[ChunkHash]) -> Result<(), DomainError> {
    let wanted = distinct(hashes);
    manifests::reference_held(store, &wanted, |_| None, "invalid_request")?;
    release(store, holder, 0)?;
    for (part, batch) in wanted.chunks(PART_HASHES).enumerate() {
        store.run(
            "INSERT INTO fork_holds (holder, part, hashes) VALUES (?1, ?2, ?3)",
            params![
                holder,
                u64::try_from(part).unwrap_or(u64::MAX),
                batch.concat()
            ],
        )?;
    }
    Ok(())
}

/// `holder` releases its hold, if any; the chunks nothing else names are
/// collected after `readable_until`. Answers whether there was one.
pub fn release(
    store: &impl SqlStore,
    holder: &str,
    readable_until: i64,
) -> Result<bool, DomainError> {
    let held = held_by(store, holder)?;
    if held.is_empty() {
        return Ok(false);
    }
    store.run("DELETE FROM fork_holds WHERE holder = ?1", params![holder])?;
    table::release(store, &distinct(&held), readable_until)?;
    Ok(true)
}

/// Counts again every hold's reference (after `table::release_all` set
/// every count to zero: the agent is wiped, its forks' holds stay).
pub fn reference_held(store: &impl SqlStore) -> Result<(), DomainError> {
    for holder in holders(store)? {
        table::reference(store, &distinct(&held_by(store, &holder)?))?;
    }
    Ok(())
}

/// Who holds chunks here, by name.
pub fn holders(store: &impl SqlStore) -> Result<Vec<String>, DomainError> {
    store
        .execute(
            "SELECT DISTINCT holder FROM fork_holds ORDER BY holder",
            params![],
        )?
        .iter()
        .map(|row| Ok(row.text(0)?.to_owned()))
        .collect()
}

/// The hashes `holder` holds.
fn held_by(store: &impl SqlStore, holder: &str) -> Result<Vec<ChunkHash>, DomainError> {
    let rows = store.execute(
        "SELECT hashes FROM fork_holds WHERE holder = ?1 ORDER BY part",
        params![holder],
    )?;
    let mut hashes = Vec::new();
    for row in rows {
        let blob = row.blob(0).unwrap_or_default();
        hashes.extend(
            blob.chunks_exact(32)
                .filter_map(|raw| ChunkHash::try_from(raw).ok()),
        );
    }
    Ok(hashes)
}
