//! Chunks a fork names whose key lives in another agent's folder: its
//! *origin*, the agent (same town) whose KV prefix holds the key. A fork
//! copies no chunk bytes: it records its source's chunks as `stored` rows
//! of its own with their origin here ([`adopt`]), so that its manifests,
//! uploads (a held chunk is not written again) and collection treat them
//! like its own. Its collection drops such a row but never reaches the
//! origin's key: the key it deletes is under its own folder, where the
//! chunk is not. Reads find the key through the fork's lineage
//! ([`super::lineage`]); the origin keeps it while the fork's hold there
//! lasts ([`super::holds`]).

use super::{
    digest::ChunkHash,
    table::{STORED, distinct, each_batch, hash_of},
};
use crate::{
    DomainError, ids, params,
    sql::{RowExt, SqlStore},
};
use std::collections::HashMap;

/// Adopted chunks per pair of statements (a group's JSON is tens of KB).
const ADOPT_GROUP: usize = 2_000;

pub(super) const STATEMENTS: &[&str] = &["CREATE TABLE IF NOT EXISTS chunk_origins (
        hash BLOB PRIMARY KEY,
        origin TEXT NOT NULL
    )"];

/// An agent of the same town, as an origin is written: `rig/agent` (ids
/// hold no `/`).
pub fn origin_name(rig: &str, agent: &str) -> String {
    format!("{rig}/{agent}")
}

/// The rig and agent an origin names, checked as ids.
pub fn parse_origin(origin: &str) -> Result<(String, String), DomainError> {
    let bad = || DomainError::invalid("invalid_request", format!("{origin:?} is not rig/agent"));
    let (rig, agent) = origin.split_once('/').ok_or_else(bad)?;
    ids::check_id("rig", rig)?;
    ids::check_id("agent", agent)?;
    Ok((rig.to_owned(), agent.to_owned()))
}

/// A chunk a fork takes: its name, its size, and the origin holding its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adopted {
    /// Its sha256.
    pub hash: ChunkHash,
    /// Its size.
    pub size: u64,
    /// `rig/agent` of the agent whose folder holds its key.
    pub origin: String,
}

/// Records chunks whose keys another agent's folder holds as `stored`,
/// kept from collection until `pending_until` (the fork's manifests are
/// about to name them). A chunk already stored here stays as it is.
pub fn adopt(
    store: &impl SqlStore,
    chunks: &[Adopted],
    now_ms: i64,
    pending_until: i64,
) -> Result<(), DomainError> {
    let hashes: Vec<ChunkHash> = chunks.iter().map(|c| c.hash).collect();
    let stored = super::table::stored_sizes(store, &distinct(&hashes))?;
    let fresh: Vec<&Adopted> = chunks
        .iter()
        .filter(|c| !stored.contains_key(&c.hash))
        .collect();
    // A row uploading or being deleted here names a key in this folder; the
    // adopted chunk's key is the origin's, found through the lineage
    // whatever happens to this folder's key. A group's rows go in two
    // statements (its hashes one blob, sizes and origins one JSON array):
    // a fork of a 100 MB kilo.db takes thousands of chunks.
    for group in fresh.chunks(ADOPT_GROUP) {
        let hashes: Vec<u8> = group.iter().flat_map(|c| c.hash).collect();
        let rows: Vec<(u64, &str)> = group.iter().map(|c| (c.size, c.origin.as_str())).collect();
        let rows = serde_json::to_string(&rows)
            .map_err(|err| DomainError::Storage(format!("adopted rows as JSON: {err}")))?;
        store.run(
            "INSERT OR REPLACE INTO snapshot_chunks
                (hash, size, state, refs, pending_until, changed_at)
             SELECT substr(?2, key * 32 + 1, 32), json_extract(value, '$[0]'), ?3, 0, ?4, ?5
             FROM json_each(?1)",
            params![rows.as_str(), hashes.clone(), STORED, pending_until, now_ms],
        )?;
        store.run(
            "INSERT OR REPLACE INTO chunk_origins (hash, origin)
             SELECT substr(?2, key * 32 + 1, 32), json_extract(value, '$[1]')
             FROM json_each(?1)",
            params![rows, hashes],
        )?;
    }
    super::table::keep_until(store, &hashes, pending_until)
}

/// The origin of each of `hashes` that another agent's folder holds.
pub fn origins(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
) -> Result<HashMap<ChunkHash, String>, DomainError> {
    let mut found = HashMap::new();
    each_batch(
        store,
        "SELECT hash, origin FROM chunk_origins WHERE hash IN ({in})",
        &[],
        hashes,
        |row| {
            found.insert(hash_of(row, 0)?, row.text(1)?.to_owned());
            Ok(())
        },
    )?;
    Ok(found)
}

/// The chunks' rows went (collected) or now name this folder's key (a
/// fresh upload): they have no origin any more.
pub(super) fn forget(store: &impl SqlStore, hashes: &[ChunkHash]) -> Result<(), DomainError> {
    each_batch(
        store,
        "DELETE FROM chunk_origins WHERE hash IN ({in})",
        &[],
        hashes,
        |_| Ok(()),
    )
}
