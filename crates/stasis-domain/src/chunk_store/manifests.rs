//! What owns versions in the chunk store, and its manifests: per version,
//! the chunks the version names, each counted once in the chunk table
//! ([`super::table`]) for as long as the row lasts.
//!
//! An [`Owner`] is a kind of thing an agent keeps versions of (its kilo.db
//! snapshot today) and names its tables: the manifests by version, the
//! version counter, and the marks that go with a version's manifest. Every
//! owner's chunks live in the one chunk table, so a chunk two owners name
//! (or two versions of one) is stored once and collected only when no
//! version of any owner names it.

use super::{
    digest::{self, ChunkHash},
    table::{self, distinct},
};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore, StorageError},
};
use std::collections::{HashMap, HashSet};

/// A kind of thing whose versions name chunks, and its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// The manifests, one row per version: `(version, chunk_size, hashes)`,
    /// `hashes` the raw sha256s concatenated (a Durable Object row holds
    /// about 60,000 of them).
    pub manifests: &'static str,
    /// The newest version handed out, one row: versions (and so KV keys)
    /// are never reused, even after a delete.
    pub counter: &'static str,
    /// Tables of marks keyed by version, `(version)` alone, whose row goes
    /// with the version's manifest.
    pub marks: &'static [&'static str],
}

impl Owner {
    /// Creates the owner's tables if they are missing.
    pub fn migrate(&self, store: &impl SqlStore) -> Result<(), StorageError> {
        store.run(
            &format!(
                "CREATE TABLE IF NOT EXISTS {} (
                    version INTEGER PRIMARY KEY,
                    chunk_size INTEGER NOT NULL,
                    hashes BLOB NOT NULL
                )",
                self.manifests
            ),
            Vec::new(),
        )?;
        store.run(
            &format!(
                "CREATE TABLE IF NOT EXISTS {} (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    last_version INTEGER NOT NULL
                )",
                self.counter
            ),
            Vec::new(),
        )?;
        for marks in self.marks {
            let table = format!("CREATE TABLE IF NOT EXISTS {marks} (version INTEGER PRIMARY KEY)");
            store.run(&table, Vec::new())?;
        }
        Ok(())
    }

    /// Hands out the next version number (never reused).
    pub fn next_version(&self, store: &impl SqlStore) -> Result<u64, DomainError> {
        let last = store
            .first_row(
                &format!("SELECT last_version FROM {} WHERE id = 1", self.counter),
                Vec::new(),
            )?
            .map(|row| row.uint(0))
            .transpose()?
            .unwrap_or(0);
        let version = last + 1;
        store.run(
            &format!(
                "INSERT INTO {} (id, last_version) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET last_version = excluded.last_version",
                self.counter
            ),
            params![version],
        )?;
        Ok(version)
    }

    /// Adds a manifest row and counts one more reference to each chunk it
    /// names.
    pub fn add_manifest(
        &self,
        store: &impl SqlStore,
        version: u64,
        chunk_size: u64,
        hashes: &[ChunkHash],
    ) -> Result<(), DomainError> {
        self.insert_manifest(store, version, chunk_size, hashes)?;
        table::reference(store, &distinct(hashes))
    }

    /// Adds a manifest row whose chunks were counted already
    /// ([`reference_held`]).
    pub fn insert_manifest(
        &self,
        store: &impl SqlStore,
        version: u64,
        chunk_size: u64,
        hashes: &[ChunkHash],
    ) -> Result<(), DomainError> {
        store.run(
            &format!(
                "INSERT OR REPLACE INTO {} (version, chunk_size, hashes) VALUES (?1, ?2, ?3)",
                self.manifests
            ),
            params![version, chunk_size, hashes.concat()],
        )?;
        Ok(())
    }

    /// Appends `hashes` to manifest `version` (one being written as its
    /// chunks are recorded), counting a reference to those it did not name
    /// yet. `None` when there is no such manifest.
    pub fn append(
        &self,
        store: &impl SqlStore,
        version: u64,
        hashes: &[ChunkHash],
    ) -> Result<Option<()>, DomainError> {
        let Some((_, mut named)) = self.manifest(store, version)? else {
            return Ok(None);
        };
        let known: HashSet<ChunkHash> = named.iter().copied().collect();
        let new: Vec<ChunkHash> = distinct(hashes)
            .into_iter()
            .filter(|hash| !known.contains(hash))
            .collect();
        table::reference(store, &new)?;
        named.extend_from_slice(hashes);
        store.run(
            &format!(
                "UPDATE {} SET hashes = ?2 WHERE version = ?1",
                self.manifests
            ),
            params![version, named.concat()],
        )?;
        Ok(Some(()))
    }

    /// A version's manifest: its chunk size and chunk hashes.
    pub fn manifest(
        &self,
        store: &impl SqlStore,
        version: u64,
    ) -> Result<Option<(u64, Vec<ChunkHash>)>, DomainError> {
        let Some(row) = store.first_row(
            &format!(
                "SELECT chunk_size, hashes FROM {} WHERE version = ?1",
                self.manifests
            ),
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

    /// Drops a manifest row, if any, its marks and its references; the
    /// chunks no version names any more stay readable until
    /// `readable_until` (a reader of the dropped version may still be
    /// reading them).
    pub fn drop_manifest(
        &self,
        store: &impl SqlStore,
        version: u64,
        readable_until: i64,
    ) -> Result<(), DomainError> {
        let Some((_, hashes)) = self.manifest(store, version)? else {
            return Ok(());
        };
        let tables = std::iter::once(self.manifests).chain(self.marks.iter().copied());
        for table in tables {
            let drop = format!("DELETE FROM {table} WHERE version = ?1");
            store.run(&drop, params![version])?;
        }
        table::release(store, &distinct(&hashes), readable_until)
    }

    /// Drops every manifest row of the owner (the agent is destroyed or
    /// replaced).
    pub fn drop_all_manifests(&self, store: &impl SqlStore) -> Result<(), DomainError> {
        let versions: Vec<u64> = store
            .execute(
                &format!("SELECT version FROM {}", self.manifests),
                Vec::new(),
            )?
            .iter()
            .map(|row| row.uint(0))
            .collect::<Result<_, _>>()?;
        for version in versions {
            self.drop_manifest(store, version, 0)?;
        }
        Ok(())
    }

    /// Marks version `version` in `marks` (one of [`Owner::marks`]).
    pub fn mark(
        &self,
        store: &impl SqlStore,
        marks: &str,
        version: u64,
    ) -> Result<(), DomainError> {
        let mark = format!("INSERT OR REPLACE INTO {marks} (version) VALUES (?1)");
        store.run(&mark, params![version])?;
        Ok(())
    }

    /// Whether [`Owner::mark`] marked version `version` in `marks`.
    pub fn is_marked(
        &self,
        store: &impl SqlStore,
        marks: &str,
        version: u64,
    ) -> Result<bool, DomainError> {
        let query = format!("SELECT 1 FROM {marks} WHERE version = ?1");
        Ok(store.first_row(&query, params![version])?.is_some())
    }
}

/// Until when the chunks a version named stay readable once it is
/// superseded (or deleted) at `now`: with no grace, they may go at once.
pub fn readable_until(now: i64, grace_ms: i64) -> i64 {
    if grace_ms > 0 {
        now.saturating_add(grace_ms)
    } else {
        0
    }
}

/// The step before a commit names `hashes` in a manifest, and its count:
/// counts one more reference to each of `hashes` the store holds (one
/// `UPDATE … RETURNING` per batch), then refuses with 409
/// `chunks_missing`, listing the missing ones once each, or 400 `code`
/// for a chunk of another size than its position needs (`expected_len`,
/// `None` where any size goes). A refused call rolls back every write it
/// made (on both runtimes), the counts with it.
pub fn reference_held(
    store: &impl SqlStore,
    hashes: &[ChunkHash],
    expected_len: impl Fn(usize) -> Option<u64>,
    code: &str,
) -> Result<(), DomainError> {
    let sizes = table::reference_stored(store, &distinct(hashes))?;
    verify_held(hashes, &sizes, expected_len, code)
}

/// Refuses with 409 `chunks_missing` when `sizes` (the stored ones) lacks
/// any of `hashes`, or with 400 `code` when one has another size than its
/// position needs.
pub fn verify_held(
    hashes: &[ChunkHash],
    sizes: &HashMap<ChunkHash, u64>,
    expected_len: impl Fn(usize) -> Option<u64>,
    code: &str,
) -> Result<(), DomainError> {
    let missing: Vec<String> = distinct(hashes)
        .iter()
        .filter(|h| !sizes.contains_key(*h))
        .map(digest::to_hex)
        .collect();
    if !missing.is_empty() {
        return Err(DomainError::ChunksMissing { missing });
    }
    for (index, hash) in hashes.iter().enumerate() {
        let recorded = sizes.get(hash).copied().unwrap_or_default();
        let Some(expected) = expected_len(index) else {
            continue;
        };
        if recorded != expected {
            return Err(DomainError::invalid(
                code,
                format!(
                    "chunk {index} ({}) holds {recorded} bytes; its position needs {expected}",
                    digest::to_hex(hash)
                ),
            ));
        }
    }
    Ok(())
}
