//! The agent's registration (role and metadata), reading it with the log's
//! figures, and destroying everything the agent has.

use super::{MAX_DOCUMENT_BYTES, checkpoint, checks};
use crate::{
    DomainError, Refusal, event_log, params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The longest role accepted, in bytes.
pub const MAX_ROLE_BYTES: usize = 128;

/// The agent's record, as `PutAgent` left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// `mayor`, `polecat`, `refinery` or any other string.
    pub role: String,
    /// JSON text; `null` when never given.
    pub metadata: String,
    /// First registration, ms since the epoch.
    pub created_at: i64,
    /// Last `PutAgent`, ms since the epoch.
    pub updated_at: i64,
    /// True when this call registered the agent (HTTP 201).
    pub created: bool,
}

/// The agent as `GET` shows it (the caller adds the snapshot metadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSummary {
    /// The agent's role.
    pub role: String,
    /// JSON text; `null` when never given.
    pub metadata: String,
    /// First registration, ms since the epoch.
    pub created_at: i64,
    /// Last `PutAgent`, ms since the epoch.
    pub updated_at: i64,
    /// The newest seq ever assigned (0 while the log is empty).
    pub last_seq: u64,
    /// Events currently stored.
    pub event_count: u64,
    /// True when a checkpoint is stored.
    pub has_checkpoint: bool,
}

/// What `DestroyAgent` found before it wiped the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestroyOutcome {
    /// The agent was registered or had any state (events, seqs, sessions,
    /// checkpoint, memory, producer stamps).
    pub existed: bool,
    /// The agent was registered.
    pub registered: bool,
}

/// The stored row, without the call's `created` flag.
struct StoredRecord {
    role: String,
    metadata: String,
    created_at: i64,
    updated_at: i64,
}

/// The checks `put` makes, for a caller that must refuse a bad registration
/// before it touches anything else (the town's agent list).
pub fn check_registration(role: &str, metadata: Option<&str>) -> Result<(), DomainError> {
    checks::role(role, MAX_ROLE_BYTES).map_err(|b| b.for_call("role", "invalid_request"))?;
    if let Some(text) = metadata {
        checks::json_text(text, MAX_DOCUMENT_BYTES)
            .map_err(|b| b.for_call("metadata", "metadata_too_large"))?;
    }
    Ok(())
}

/// Registers the agent or updates its role. `metadata: None` keeps the
/// stored metadata (`null` for a new agent), like an omitted session field.
pub fn put(
    store: &impl SqlStore,
    role: &str,
    metadata: Option<&str>,
    now_ms: i64,
) -> Result<AgentRecord, DomainError> {
    check_registration(role, metadata)?;
    let existing = load(store)?;
    let created = existing.is_none();
    let (metadata, created_at) = match existing {
        Some(old) => (metadata.map_or(old.metadata, str::to_owned), old.created_at),
        None => (metadata.unwrap_or("null").to_owned(), now_ms),
    };
    write(store, role, &metadata, created_at, now_ms)?;
    Ok(AgentRecord {
        role: role.to_owned(),
        metadata,
        created_at,
        updated_at: now_ms,
        created,
    })
}

/// Stores the one record row, replacing any.
pub(super) fn write(
    store: &impl SqlStore,
    role: &str,
    metadata: &str,
    created_at: i64,
    updated_at: i64,
) -> Result<(), DomainError> {
    store.run(
        "INSERT INTO agent_record (id, role, metadata, created_at, updated_at) VALUES (1, ?1, ?2, ?3, ?4)
         ON CONFLICT (id) DO UPDATE SET role = excluded.role, metadata = excluded.metadata,
            created_at = excluded.created_at, updated_at = excluded.updated_at",
        params![role, metadata, created_at, updated_at],
    )?;
    Ok(())
}

/// The registered agent with its log figures; `agent_not_found` when it was
/// never registered (events alone do not register an agent).
pub fn summary(store: &impl SqlStore) -> Result<AgentSummary, DomainError> {
    let Some(record) = load(store)? else {
        return Err(DomainError::NotFound(Refusal::new(
            "agent_not_found",
            "the agent is not registered; PUT it with a role first",
        )));
    };
    let log = event_log::state(store)?;
    Ok(AgentSummary {
        role: record.role,
        metadata: record.metadata,
        created_at: record.created_at,
        updated_at: record.updated_at,
        last_seq: log.last_seq,
        event_count: log.event_count,
        has_checkpoint: checkpoint::exists(store)?,
    })
}

/// The role and metadata, if registered (export reads them).
pub(super) fn role_and_metadata(
    store: &impl SqlStore,
) -> Result<Option<(String, String)>, DomainError> {
    Ok(load(store)?.map(|r| (r.role, r.metadata)))
}

fn load(store: &impl SqlStore) -> Result<Option<StoredRecord>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT role, metadata, created_at, updated_at FROM agent_record WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    Ok(Some(StoredRecord {
        role: row.text(0)?.to_owned(),
        metadata: row.text(1)?.to_owned(),
        created_at: row.int(2)?,
        updated_at: row.int(3)?,
    }))
}

/// Removes everything the agent has except its snapshot (whose rules
/// delete it, KV keys included) and says what was there.
pub fn destroy(store: &impl SqlStore) -> Result<DestroyOutcome, DomainError> {
    let row = store.first_row(
        "SELECT EXISTS (SELECT 1 FROM agent_record),
                COALESCE((SELECT last_seq FROM log_state WHERE id = 1), 0) > 0
                OR EXISTS (SELECT 1 FROM events)
                OR EXISTS (SELECT 1 FROM sessions)
                OR EXISTS (SELECT 1 FROM checkpoint)
                OR EXISTS (SELECT 1 FROM memory)
                OR EXISTS (SELECT 1 FROM producer_batches)",
        Vec::new(),
    )?;
    let (registered, had_state) = match row {
        Some(row) => (row.int(0)? != 0, row.int(1)? != 0),
        None => (false, false),
    };
    wipe(store)?;
    // An import in progress would otherwise bring the agent back.
    super::staging::clear(store)?;
    Ok(DestroyOutcome {
        existed: registered || had_state,
        registered,
    })
}

/// Empties every table this module and the event log own, and resets the
/// log so the next seq is 1 (destroy means gone; import starts from here).
pub(super) fn wipe(store: &impl SqlStore) -> Result<(), DomainError> {
    for statement in [
        "DELETE FROM events",
        "DELETE FROM sessions",
        "DELETE FROM producer_batches",
        "UPDATE log_state SET first_seq = 0, last_seq = 0, event_count = 0 WHERE id = 1",
        "DELETE FROM checkpoint",
        "DELETE FROM memory",
        "DELETE FROM agent_record",
    ] {
        store.run(statement, Vec::new())?;
    }
    // The versions' rows and pins go; each owner's manifests go with its
    // own wipe (destroy) or `drop_all` (import).
    crate::history::wipe(store)?;
    // Summaries of the old log would describe turns that are gone.
    crate::summary_cache::clear(store)
}
