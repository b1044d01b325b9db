//! The agent object's event tables.

use crate::sql::{SqlStore, StorageError};

/// Statements that create the tables; each is idempotent.
const STATEMENTS: &[&str] = &[
    // One row: the log's bounds, read and written by every append.
    "CREATE TABLE IF NOT EXISTS log_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        event_count INTEGER NOT NULL
    )",
    "INSERT OR IGNORE INTO log_state (id, first_seq, last_seq, event_count) VALUES (1, 0, 0, 0)",
    "CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY,
        type TEXT NOT NULL,
        session_id TEXT,
        data TEXT NOT NULL,
        created_at INTEGER NOT NULL
    )",
    "CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq) WHERE session_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS events_by_type ON events (type, seq)",
    "CREATE TABLE IF NOT EXISTS sessions (
        session_id TEXT PRIMARY KEY,
        status TEXT NOT NULL DEFAULT 'running',
        metadata TEXT NOT NULL DEFAULT 'null',
        first_seq INTEGER NOT NULL DEFAULT 0,
        last_seq INTEGER NOT NULL DEFAULT 0,
        event_count INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    )",
    // Remembered batches, for idempotent retries.
    "CREATE TABLE IF NOT EXISTS producer_batches (
        producer_id TEXT NOT NULL,
        producer_seq INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        PRIMARY KEY (producer_id, producer_seq)
    ) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS producer_batches_by_last_seq ON producer_batches (last_seq)",
];

/// Creates the event log's tables if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}
