//! The agent's key-value memory: ids as keys, JSON documents as values.

use super::{MAX_DOCUMENT_BYTES, checks};
use crate::{
    DomainError, Refusal,
    history::{self, Kind, documents},
    ids,
    object_env::ObjectEnv,
    params,
    sql::{Row, RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};

/// Entries a listing returns unless `limit` says otherwise.
pub const DEFAULT_MEMORY_LIST_LIMIT: u32 = 100;
/// The largest `limit` a listing accepts.
pub const MAX_MEMORY_LIST_LIMIT: u32 = 1_000;

/// One memory entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryEntry {
    /// The key, an id.
    pub key: String,
    /// The value, JSON text exactly as stored.
    pub value: String,
    /// When it was written, ms since the epoch.
    pub updated_at: i64,
}

/// Writes `value` under `key`. Over [`MAX_DOCUMENT_BYTES`] → 413
/// `memory_value_too_large`.
pub fn put(
    store: &impl SqlStore,
    key: &str,
    value: &str,
    env: &ObjectEnv,
) -> Result<MemoryEntry, DomainError> {
    let now_ms = env.now_ms;
    ids::check_id("memory key", key)?;
    checks::json_text(value, MAX_DOCUMENT_BYTES)
        .map_err(|b| b.for_call("the memory value", "memory_value_too_large"))?;
    keep_previous(store, key, false, env)?;
    let entry = MemoryEntry {
        key: key.to_owned(),
        value: value.to_owned(),
        updated_at: now_ms,
    };
    write(store, &entry)?;
    Ok(entry)
}

/// Stores one entry, replacing any under its key (import; validated).
pub(super) fn write(store: &impl SqlStore, entry: &MemoryEntry) -> Result<(), DomainError> {
    store.run(
        "INSERT INTO memory (key, value, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        params![entry.key.as_str(), entry.value.as_str(), entry.updated_at],
    )?;
    Ok(())
}

/// The entry under `key`, or `memory_not_found`.
pub fn get(store: &impl SqlStore, key: &str) -> Result<MemoryEntry, DomainError> {
    ids::check_id("memory key", key)?;
    find(store, key)?.ok_or_else(|| not_found(key))
}

/// The entry under `key`, if any.
pub fn find(store: &impl SqlStore, key: &str) -> Result<Option<MemoryEntry>, DomainError> {
    store
        .first_row(
            "SELECT key, value, updated_at FROM memory WHERE key = ?1",
            params![key],
        )?
        .map(|row| from_row(&row))
        .transpose()
}

/// Removes the entry under `key` (kept as history, the deletion a version
/// of its own); `memory_not_found` when there is none.
pub fn delete(store: &impl SqlStore, key: &str, env: &ObjectEnv) -> Result<(), DomainError> {
    ids::check_id("memory key", key)?;
    let found = store.first_row("SELECT 1 FROM memory WHERE key = ?1", params![key])?;
    if found.is_none() {
        return Err(not_found(key));
    }
    keep_previous(store, key, true, env)?;
    store.run("DELETE FROM memory WHERE key = ?1", params![key])?;
    Ok(())
}

/// Keeps the value a write of `key` replaces as history.
pub(super) fn keep_previous(
    store: &impl SqlStore,
    key: &str,
    deletes: bool,
    env: &ObjectEnv,
) -> Result<(), DomainError> {
    let previous = find(store, key)?;
    let previous = previous.as_ref().map(|p| (p.value.as_str(), p.updated_at));
    let now = (env.now_ms, &env.retention);
    documents::write(store, (Kind::Memory, key), previous, deletes, now).map(drop)
}

/// Version `version` of `key`: the current one or a kept one (404
/// `version_not_found`; a deletion is 404 `memory_not_found`).
pub fn get_version(
    store: &impl SqlStore,
    key: &str,
    version: u64,
) -> Result<MemoryEntry, DomainError> {
    ids::check_id("memory key", key)?;
    let current = history::versions::current(store, Kind::Memory, key)?;
    if current.is_some_and(|c| c.version == version && !c.deleted) {
        return get(store, key);
    }
    let (value, updated_at) =
        documents::read(store, (Kind::Memory, key), version)?.ok_or_else(|| not_found(key))?;
    Ok(MemoryEntry {
        key: key.to_owned(),
        value,
        updated_at,
    })
}

/// Entries sorted by key: those whose key starts with `prefix`, whose
/// value's JSON text contains `query` (case-insensitive for ASCII letters:
/// SQLite's `lower`), at most `limit` (1 to [`MAX_MEMORY_LIST_LIMIT`],
/// default [`DEFAULT_MEMORY_LIST_LIMIT`]).
pub fn list(
    store: &impl SqlStore,
    prefix: Option<&str>,
    query: Option<&str>,
    limit: Option<u32>,
) -> Result<Vec<MemoryEntry>, DomainError> {
    let limit = limit.unwrap_or(DEFAULT_MEMORY_LIST_LIMIT);
    if !(1..=MAX_MEMORY_LIST_LIMIT).contains(&limit) {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("limit must be 1 to {MAX_MEMORY_LIST_LIMIT}, got {limit}"),
        ));
    }
    let mut sql = String::from("SELECT key, value, updated_at FROM memory WHERE 1");
    let mut params: Vec<SqlValue> = Vec::new();
    match prefix.filter(|p| !p.is_empty()).map(key_range) {
        None => {}
        Some(None) => return Ok(Vec::new()),
        Some(Some((low, high))) => {
            params.push(low.into());
            params.push(high.into());
            sql.push_str(" AND key >= ?1 AND key < ?2");
        }
    }
    if let Some(query) = query.filter(|q| !q.is_empty()) {
        params.push(query.into());
        sql.push_str(&format!(
            " AND instr(lower(value), lower(?{})) > 0",
            params.len()
        ));
    }
    params.push(limit.into());
    sql.push_str(&format!(" ORDER BY key LIMIT ?{}", params.len()));
    store.execute(&sql, params)?.iter().map(from_row).collect()
}

/// The key range `[prefix, upper)` holding exactly the keys that start with
/// `prefix`, so the primary key index answers it (LIKE would read `_` and
/// `%` as wildcards, and both `_` and `.` occur in ids). `None` when no key
/// can start with `prefix`: keys are ids, so a prefix with another character
/// matches nothing. Id characters are ASCII below `~`, so the last one plus
/// one is still one ASCII character and the bound stays valid text.
fn key_range(prefix: &str) -> Option<(String, String)> {
    let is_id_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-');
    let (&last, head) = prefix.as_bytes().split_last()?;
    if !prefix.bytes().all(is_id_char) {
        return None;
    }
    let mut upper = String::from_utf8_lossy(head).into_owned();
    upper.push(char::from(last + 1));
    Some((prefix.to_owned(), upper))
}

fn from_row(row: &Row) -> Result<MemoryEntry, DomainError> {
    Ok(MemoryEntry {
        key: row.text(0)?.to_owned(),
        value: row.text(1)?.to_owned(),
        updated_at: row.int(2)?,
    })
}

fn not_found(key: &str) -> DomainError {
    DomainError::NotFound(Refusal::new(
        "memory_not_found",
        format!("no memory entry under key {key:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::key_range;

    #[test]
    fn a_prefix_range_ends_just_past_the_prefix() {
        assert_eq!(key_range("ab"), Some(("ab".into(), "ac".into())));
        assert_eq!(key_range("a_"), Some(("a_".into(), "a`".into())));
        assert_eq!(key_range("z"), Some(("z".into(), "{".into())));
    }

    #[test]
    fn a_prefix_no_key_can_have_matches_nothing() {
        assert_eq!(key_range("a/b"), None);
        assert_eq!(key_range("é"), None);
        assert_eq!(key_range(""), None);
    }
}
