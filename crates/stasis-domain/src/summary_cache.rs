//! The agent object's cache of conversation summaries: one row per
//! conversation scope and budget ([`SummaryKey`]), holding the newest
//! summary and the watermark it covers.
//!
//! It is a cache, not the agent's state: an export leaves it out, and
//! whatever rewrites the log under it (destroy, import, a deleted session)
//! empties it, so a summary never covers turns that are not the agent's.
//! At most [`MAX_CACHED_SUMMARIES`] rows are kept, the oldest written
//! going first (dispatches use one budget; other budgets come from
//! conversation reads that asked for a summary).

use crate::{
    DomainError,
    conversation::{StoredSummary, SummaryKey},
    params,
    sql::{RowExt, SqlStore},
};

/// Summaries kept per agent.
pub const MAX_CACHED_SUMMARIES: u64 = 8;

/// `session_id` of the row for every session's conversation (ids are never
/// empty).
const ALL_SESSIONS: &str = "";

/// Creates the table if missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run(
        "CREATE TABLE IF NOT EXISTS conversation_summaries (
            session_id TEXT NOT NULL,
            max_turns INTEGER NOT NULL,
            max_tokens INTEGER NOT NULL,
            through_seq INTEGER NOT NULL,
            summary TEXT NOT NULL,
            written_at INTEGER NOT NULL,
            PRIMARY KEY (session_id, max_turns, max_tokens)
        )",
        Vec::new(),
    )?;
    Ok(())
}

/// The cached summary for `key`, if any.
pub fn read(store: &impl SqlStore, key: &SummaryKey) -> Result<Option<StoredSummary>, DomainError> {
    let row = store.first_row(
        "SELECT summary, through_seq FROM conversation_summaries
         WHERE session_id = ?1 AND max_turns = ?2 AND max_tokens = ?3",
        key_params(key),
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(StoredSummary {
        text: row.text(0)?.to_owned(),
        through_seq: row.uint(1)?,
    }))
}

/// Stores `summary` for `key`, unless the row there already covers more
/// (two rebuilds raced: the further one stays), and keeps the newest
/// [`MAX_CACHED_SUMMARIES`] rows.
pub fn write(
    store: &impl SqlStore,
    key: &SummaryKey,
    summary: &StoredSummary,
    now_ms: i64,
) -> Result<(), DomainError> {
    let mut params = key_params(key);
    params.extend(params![summary.through_seq, summary.text.as_str(), now_ms]);
    store.run(
        "INSERT INTO conversation_summaries
             (session_id, max_turns, max_tokens, through_seq, summary, written_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id, max_turns, max_tokens) DO UPDATE SET
             through_seq = excluded.through_seq,
             summary = excluded.summary,
             written_at = excluded.written_at
         WHERE excluded.through_seq >= conversation_summaries.through_seq",
        params,
    )?;
    store.run(
        "DELETE FROM conversation_summaries WHERE rowid NOT IN (
             SELECT rowid FROM conversation_summaries
             ORDER BY written_at DESC, rowid DESC LIMIT ?1)",
        params![MAX_CACHED_SUMMARIES],
    )?;
    Ok(())
}

/// Empties the cache (the log under it was rewritten).
pub fn clear(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run("DELETE FROM conversation_summaries", Vec::new())?;
    Ok(())
}

fn key_params(key: &SummaryKey) -> Vec<crate::sql::SqlValue> {
    params![
        key.session_id.as_deref().unwrap_or(ALL_SESSIONS),
        key.budget.max_turns,
        key.budget.max_tokens
    ]
}
