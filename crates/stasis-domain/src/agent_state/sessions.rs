//! Sessions: status and metadata set by the agent's owner, seq range and
//! event count kept by the log (appends and retention maintain the row).

use super::{MAX_DOCUMENT_BYTES, checks};
use crate::{
    DomainError, Refusal, ids, params,
    sql::{Row, RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The statuses a session may have; new sessions are `running`.
pub const SESSION_STATUSES: [&str; 4] = ["running", "completed", "failed", "closed"];

/// A session with everything stored about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The session's id.
    pub session_id: String,
    /// One of [`SESSION_STATUSES`].
    pub status: String,
    /// JSON text; `null` when never given.
    pub metadata: String,
    /// Seq of its oldest stored event (0 before its first event).
    pub first_seq: u64,
    /// Seq of its newest event (0 before its first event).
    pub last_seq: u64,
    /// Its events still stored.
    pub event_count: u64,
    /// First seen, ms since the epoch.
    pub created_at: i64,
    /// Last event or update, ms since the epoch.
    pub updated_at: i64,
}

/// What `DeleteSession` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDeleted {
    /// The deleted session.
    pub session_id: String,
    /// How many of its events were removed.
    pub events_removed: u64,
}

const COLUMNS: &str =
    "session_id, status, metadata, first_seq, last_seq, event_count, created_at, updated_at";

/// Creates the session or updates it; `None` keeps a field as it is
/// (`running` and `null` for a new session).
pub fn put(
    store: &impl SqlStore,
    session_id: &str,
    status: Option<&str>,
    metadata: Option<&str>,
    now_ms: i64,
) -> Result<SessionRecord, DomainError> {
    ids::check_id("session_id", session_id)?;
    if let Some(status) = status {
        checks::one_of(status, &SESSION_STATUSES)
            .map_err(|b| b.for_call("status", "invalid_request"))?;
    }
    if let Some(text) = metadata {
        checks::json_text(text, MAX_DOCUMENT_BYTES)
            .map_err(|b| b.for_call("metadata", "metadata_too_large"))?;
    }
    store.run(
        "INSERT INTO sessions (session_id, status, metadata, created_at, updated_at)
         VALUES (?1, COALESCE(?2, 'running'), COALESCE(?3, 'null'), ?4, ?4)
         ON CONFLICT (session_id) DO UPDATE SET
            status = COALESCE(?2, sessions.status),
            metadata = COALESCE(?3, sessions.metadata),
            updated_at = ?4",
        params![session_id, status, metadata, now_ms],
    )?;
    find(store, session_id)?.ok_or_else(|| {
        DomainError::Storage(format!("session {session_id:?} vanished after its upsert"))
    })
}

/// The session, or `session_not_found`.
pub fn get(store: &impl SqlStore, session_id: &str) -> Result<SessionRecord, DomainError> {
    ids::check_id("session_id", session_id)?;
    find(store, session_id)?.ok_or_else(|| not_found(session_id))
}

/// The session, if stored.
pub fn find(store: &impl SqlStore, session_id: &str) -> Result<Option<SessionRecord>, DomainError> {
    store
        .first_row(
            &format!("SELECT {COLUMNS} FROM sessions WHERE session_id = ?1"),
            params![session_id],
        )?
        .map(|row| from_row(&row))
        .transpose()
}

/// Every session, oldest first (ties by id), metadata included.
pub fn list(store: &impl SqlStore) -> Result<Vec<SessionRecord>, DomainError> {
    store
        .execute(
            &format!("SELECT {COLUMNS} FROM sessions ORDER BY created_at, session_id"),
            Vec::new(),
        )?
        .iter()
        .map(from_row)
        .collect()
}

/// Removes the session and all its events. The log's `last_seq` stays, so
/// their seqs are never reused, and so does its `first_seq` (the retention
/// horizon): readers whose cursor predates the deleted events lost nothing
/// by retention and must not get `cursor_expired`.
pub fn delete(store: &impl SqlStore, session_id: &str) -> Result<SessionDeleted, DomainError> {
    ids::check_id("session_id", session_id)?;
    if find(store, session_id)?.is_none() {
        return Err(not_found(session_id));
    }
    let events_removed = store
        .first_row(
            "SELECT COUNT(*) FROM events WHERE session_id = ?1",
            params![session_id],
        )?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(0);
    store.run(
        "DELETE FROM events WHERE session_id = ?1",
        params![session_id],
    )?;
    store.run(
        "DELETE FROM sessions WHERE session_id = ?1",
        params![session_id],
    )?;
    store.run(
        "UPDATE log_state SET event_count = MAX(event_count - ?1, 0) WHERE id = 1",
        params![events_removed],
    )?;
    // The session's turns are gone: no summary may still tell them.
    crate::summary_cache::clear(store)?;
    Ok(SessionDeleted {
        session_id: session_id.to_owned(),
        events_removed,
    })
}

fn from_row(row: &Row) -> Result<SessionRecord, DomainError> {
    Ok(SessionRecord {
        session_id: row.text(0)?.to_owned(),
        status: row.text(1)?.to_owned(),
        metadata: row.text(2)?.to_owned(),
        first_seq: row.uint(3)?,
        last_seq: row.uint(4)?,
        event_count: row.uint(5)?,
        created_at: row.int(6)?,
        updated_at: row.int(7)?,
    })
}

fn not_found(session_id: &str) -> DomainError {
    DomainError::NotFound(Refusal::new(
        "session_not_found",
        format!("no session {session_id:?}"),
    ))
}
