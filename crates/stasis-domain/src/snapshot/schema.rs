//! The agent object's snapshot tables: kilo.db's own, the chunk store's
//! chunk table, and kilo.db's version tables as its owner ([`KILO_DB`]).

use super::KILO_DB;
use crate::{
    chunk_store,
    sql::{SqlStore, StorageError},
};

const STATEMENTS: &[&str] = &[
    // The current snapshot; one row at most.
    "CREATE TABLE IF NOT EXISTS snapshot_meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        version INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        size INTEGER NOT NULL,
        storage TEXT NOT NULL,
        kv_key TEXT,
        event_watermark INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    )",
    // The bytes of an inline snapshot, apart from the metadata so that a
    // HEAD never reads them.
    "CREATE TABLE IF NOT EXISTS snapshot_inline (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        data BLOB NOT NULL
    )",
    // KV keys being written by a put that has not switched the metadata
    // yet; a sweep leaves them alone until they are old.
    "CREATE TABLE IF NOT EXISTS snapshot_pending (
        version INTEGER PRIMARY KEY,
        kv_key TEXT NOT NULL,
        reserved_at INTEGER NOT NULL
    )",
];

/// Creates the snapshot tables if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    chunk_store::migrate(store)?;
    KILO_DB.migrate(store)?;
    crate::history::migrate(store)?;
    store.run(super::staged::TABLE, Vec::new())?;
    store.run(super::import_chunks::TABLE, Vec::new())
}
