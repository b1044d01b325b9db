//! The tables of the agent's own state. The event log's tables (`events`,
//! `sessions`, `log_state`, `producer_batches`) are created by
//! `event_log::migrate`.

use crate::{DomainError, sql::SqlStore};

/// Statements that create the tables; each is idempotent.
const STATEMENTS: &[&str] = &[
    // One row once the agent is registered (PUT on the agent).
    "CREATE TABLE IF NOT EXISTS agent_record (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        role TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT 'null',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    )",
    // At most one row: the agent's checkpoint document, as JSON text.
    "CREATE TABLE IF NOT EXISTS checkpoint (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        document TEXT NOT NULL,
        updated_at INTEGER NOT NULL
    )",
];

/// The columns of `memory` (and of the import's staging copy). Values reach
/// 1 MiB, so a rowid table (not WITHOUT ROWID) keeps the key index small.
pub(super) const MEMORY_COLUMNS: &str = "
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at INTEGER NOT NULL";

/// Creates the agent record, checkpoint and memory tables if missing.
pub(super) fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    store.run(
        &format!("CREATE TABLE IF NOT EXISTS memory ({MEMORY_COLUMNS})"),
        Vec::new(),
    )?;
    Ok(())
}
