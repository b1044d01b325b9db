//! The version rows: the current one of each `(kind, key)`, the superseded
//! ones kept, and the listing over both.

use super::Kind;
use crate::{
    DomainError, params,
    sql::{Row, RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};

/// Versions a listing returns unless `limit` says otherwise.
pub const DEFAULT_LIST_LIMIT: u32 = 100;
/// The largest `limit` a listing accepts.
pub const MAX_LIST_LIMIT: u32 = 1_000;

/// One version of a `(kind, key)`, as listed.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionInfo {
    /// What it is a version of.
    pub kind: Kind,
    /// The memory key (memory versions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Counts up per kind, never reused.
    pub version: u64,
    /// The point of the log it belongs to (see the module's doc).
    pub seq: u64,
    /// When it was written, ms since the epoch.
    pub created_at: i64,
    /// When a later write superseded it; absent for the current version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<i64>,
    /// Whether it is the current version.
    pub current: bool,
    /// Whether this version is a deletion (the thing was absent from here).
    pub deleted: bool,
}

/// A page of versions, oldest first.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// The versions.
    pub versions: Vec<VersionInfo>,
    /// The cursor for the next page (`after`), absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after: Option<u64>,
}

/// A superseded version as it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded<'a> {
    /// What it is a version of.
    pub kind: Kind,
    /// The memory key; `""` for the other kinds.
    pub key: &'a str,
    /// Its number.
    pub version: u64,
    /// Its point of the log.
    pub seq: u64,
    /// When it was written.
    pub created_at: i64,
    /// It is a deletion.
    pub deleted: bool,
    /// Its content when it lives in SQL (a document, a kilo.db version's
    /// metadata).
    pub body: Option<&'a str>,
    /// An inline kilo.db version's bytes.
    pub inline: Option<&'a [u8]>,
}

/// The current version of a `(kind, key)`, as recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    /// Its number.
    pub version: u64,
    /// Its point of the log.
    pub seq: u64,
    /// When it was written.
    pub created_at: i64,
    /// It is a deletion.
    pub deleted: bool,
}

/// A kept version with its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// As listed.
    pub info: VersionInfo,
    /// Its content when it lives in SQL.
    pub body: Option<String>,
    /// An inline kilo.db version's bytes.
    pub inline: Option<Vec<u8>>,
}

/// Keeps a superseded version (superseded at `superseded_at`).
pub fn keep(
    store: &impl SqlStore,
    old: &Superseded<'_>,
    superseded_at: i64,
) -> Result<(), DomainError> {
    store.run(
        "INSERT OR REPLACE INTO history_versions
            (kind, key, version, seq, created_at, superseded_at, deleted, body, inline)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            old.kind.as_str(),
            old.key,
            old.version,
            old.seq,
            old.created_at,
            superseded_at,
            i64::from(old.deleted),
            old.body,
            old.inline.map(<[u8]>::to_vec)
        ],
    )?;
    Ok(())
}

/// Keeps a recorded deletion (a restore to a point without one) as
/// history, before a write replaces it.
pub fn keep_deletion(
    store: &impl SqlStore,
    kind: Kind,
    recorded: Option<Current>,
    now_ms: i64,
) -> Result<(), DomainError> {
    let Some(deleted) = recorded.filter(|c| c.deleted) else {
        return Ok(());
    };
    let old = Superseded {
        kind,
        key: "",
        version: deleted.version,
        seq: deleted.seq,
        created_at: deleted.created_at,
        deleted: true,
        body: None,
        inline: None,
    };
    keep(store, &old, now_ms)
}

/// Records the current version of `(kind, key)`.
pub fn set_current(
    store: &impl SqlStore,
    kind: Kind,
    key: &str,
    current: &Current,
) -> Result<(), DomainError> {
    store.run(
        "INSERT OR REPLACE INTO history_current
            (kind, key, version, seq, created_at, deleted)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            kind.as_str(),
            key,
            current.version,
            current.seq,
            current.created_at,
            i64::from(current.deleted)
        ],
    )?;
    Ok(())
}

/// Forgets the current version of `(kind, key)` (it was kept as history,
/// and nothing replaced it).
pub fn clear_current(store: &impl SqlStore, kind: Kind, key: &str) -> Result<(), DomainError> {
    store.run(
        "DELETE FROM history_current WHERE kind = ?1 AND key = ?2",
        params![kind.as_str(), key],
    )?;
    Ok(())
}

/// The current version of `(kind, key)`, if recorded.
pub fn current(
    store: &impl SqlStore,
    kind: Kind,
    key: &str,
) -> Result<Option<Current>, DomainError> {
    let row = store.first_row(
        "SELECT version, seq, created_at, deleted FROM history_current
         WHERE kind = ?1 AND key = ?2",
        params![kind.as_str(), key],
    )?;
    row.map(|row| {
        Ok(Current {
            version: row.uint(0)?,
            seq: row.uint(1)?,
            created_at: row.int(2)?,
            deleted: row.int(3)? != 0,
        })
    })
    .transpose()
}

/// Hands out the next version of a kind that counts its own (checkpoint,
/// memory), never reused.
pub fn next_version(store: &impl SqlStore, kind: Kind) -> Result<u64, DomainError> {
    let last = store
        .first_row(
            "SELECT last_version FROM history_counter WHERE kind = ?1",
            params![kind.as_str()],
        )?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(0);
    let version = last + 1;
    store.run(
        "INSERT INTO history_counter (kind, last_version) VALUES (?1, ?2)
         ON CONFLICT (kind) DO UPDATE SET last_version = excluded.last_version",
        params![kind.as_str(), version],
    )?;
    Ok(version)
}

/// A kept (not current) version of `kind` numbered `version`, with its
/// content.
pub fn find(store: &impl SqlStore, kind: Kind, version: u64) -> Result<Option<Kept>, DomainError> {
    let row = store.first_row(
        "SELECT key, version, seq, created_at, superseded_at, deleted, body, inline
         FROM history_versions WHERE kind = ?1 AND version = ?2",
        params![kind.as_str(), version],
    )?;
    let Some(row) = row else {
        return Ok(None);
    };
    // Only an inline kilo.db version has bytes (NULL reads as none).
    let inline = match kind {
        Kind::DbSnapshot => row.blob(7).ok().map(<[u8]>::to_vec),
        _ => None,
    };
    Ok(Some(Kept {
        info: info_from(kind, &row, false)?,
        body: row.opt_text(6)?.map(str::to_owned),
        inline,
    }))
}

/// Drops a kept version's row (retention; the owner dropped its content).
pub fn forget(
    store: &impl SqlStore,
    kind: Kind,
    key: &str,
    version: u64,
) -> Result<(), DomainError> {
    store.run(
        "DELETE FROM history_versions WHERE kind = ?1 AND key = ?2 AND version = ?3",
        params![kind.as_str(), key, version],
    )?;
    Ok(())
}

/// The versions of `kind` (of one memory `key` when given), current and
/// kept, oldest first, after version `after`.
pub fn list(
    store: &impl SqlStore,
    kind: Kind,
    key: Option<&str>,
    after: u64,
    limit: Option<u32>,
) -> Result<HistoryPage, DomainError> {
    let limit = limit.unwrap_or(DEFAULT_LIST_LIMIT);
    if !(1..=MAX_LIST_LIMIT).contains(&limit) {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("limit must be 1 to {MAX_LIST_LIMIT}, got {limit}"),
        ));
    }
    let mut params: Vec<SqlValue> = params![kind.as_str(), after, u64::from(limit) + 1];
    let by_key = match key {
        Some(key) => {
            params.push(key.into());
            " AND key = ?4"
        }
        None => "",
    };
    let sql = format!(
        "SELECT key, version, seq, created_at, superseded_at, deleted, 0 FROM history_versions
         WHERE kind = ?1 AND version > ?2{by_key}
         UNION ALL
         SELECT key, version, seq, created_at, NULL, deleted, 1 FROM history_current
         WHERE kind = ?1 AND version > ?2{by_key}
         ORDER BY 2 LIMIT ?3"
    );
    let rows = store.execute(&sql, params)?;
    let mut versions = rows
        .iter()
        .map(|row| info_from(kind, row, row.int(6)? != 0))
        .collect::<Result<Vec<_>, _>>()?;
    let has_more = versions.len() > usize::try_from(limit).unwrap_or(usize::MAX);
    versions.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let next_after = has_more
        .then(|| versions.last().map(|v| v.version))
        .flatten();
    Ok(HistoryPage {
        versions,
        next_after,
    })
}

fn info_from(kind: Kind, row: &Row, current: bool) -> Result<VersionInfo, DomainError> {
    let key = row.text(0)?;
    let superseded_at = if current { None } else { Some(row.int(4)?) };
    Ok(VersionInfo {
        kind,
        key: (kind == Kind::Memory).then(|| key.to_owned()),
        version: row.uint(1)?,
        seq: row.uint(2)?,
        created_at: row.int(3)?,
        superseded_at,
        current,
        deleted: row.int(5)? != 0,
    })
}
