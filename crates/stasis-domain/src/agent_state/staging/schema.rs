//! The staging tables: an import's rows wait here, invisible to every
//! reader, until its commit swaps them in.

use crate::{
    DomainError,
    agent_state::schema::MEMORY_COLUMNS,
    event_log::schema::{EVENTS_COLUMNS, SESSIONS_COLUMNS},
    sql::SqlStore,
};

/// Each live table and its staging copy, which has the same columns so
/// that the commit can rename the copy into place.
pub(super) const SWAPPED: [(&str, &str, &str); 3] = [
    ("events", "import_events", EVENTS_COLUMNS),
    ("sessions", "import_sessions", SESSIONS_COLUMNS),
    ("memory", "import_memory", MEMORY_COLUMNS),
];

const STATEMENTS: &[&str] = &[
    // One row once any import began: the ticket counts every import ever
    // begun (never reused), the rest describes the one in progress.
    "CREATE TABLE IF NOT EXISTS import_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        ticket INTEGER NOT NULL,
        active INTEGER NOT NULL,
        import_id TEXT,
        parts INTEGER NOT NULL,
        events INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        memory INTEGER NOT NULL
    )",
    // Present once the manifest gave `agent` (role NULL: it gave null).
    "CREATE TABLE IF NOT EXISTS import_agent (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        role TEXT,
        metadata TEXT
    )",
    // Present once the manifest gave `checkpoint` (document NULL: null).
    "CREATE TABLE IF NOT EXISTS import_checkpoint (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        document TEXT
    )",
];

/// Creates the staging tables if they are missing, and the snapshot and
/// workspace tables an import's commit switches.
pub(in crate::agent_state) fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    crate::snapshot::migrate(store)?;
    crate::workspace_store::migrate(store)?;
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    for (_, staged, columns) in SWAPPED {
        create_staging_table(store, staged, columns)?;
    }
    Ok(())
}

/// An empty staging copy, with no index but its primary key: rows arrive
/// in key order or are looked up by key only.
pub(super) fn create_staging_table(
    store: &impl SqlStore,
    name: &str,
    columns: &str,
) -> Result<(), DomainError> {
    store.run(
        &format!("CREATE TABLE IF NOT EXISTS {name} ({columns})"),
        Vec::new(),
    )?;
    Ok(())
}
