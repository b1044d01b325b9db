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

/// The columns of `events` (and of the import's staging copy, which an
/// import's commit renames into its place).
pub(crate) const EVENTS_COLUMNS: &str = "
    seq INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    session_id TEXT,
    data TEXT NOT NULL,
    created_at INTEGER NOT NULL";

/// The columns of `sessions` (and of the import's staging copy).
pub(crate) const SESSIONS_COLUMNS: &str = "
    session_id TEXT PRIMARY KEY,
    status TEXT NOT NULL DEFAULT 'running',
    metadata TEXT NOT NULL DEFAULT 'null',
    first_seq INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    event_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL";

/// The indexes of `events`, created again whenever the table is replaced.
const EVENT_INDEXES: &[&str] = &[
    "CREATE INDEX IF NOT EXISTS events_by_session ON events (session_id, seq) WHERE session_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS events_by_type ON events (type, seq)",
];

/// Creates the event log's tables if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    store.run(
        &format!("CREATE TABLE IF NOT EXISTS events ({EVENTS_COLUMNS})"),
        Vec::new(),
    )?;
    store.run(
        &format!("CREATE TABLE IF NOT EXISTS sessions ({SESSIONS_COLUMNS})"),
        Vec::new(),
    )?;
    create_event_indexes(store)?;
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}

/// Creates the indexes of `events` if they are missing.
pub(crate) fn create_event_indexes(store: &impl SqlStore) -> Result<(), StorageError> {
    for statement in EVENT_INDEXES {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}
