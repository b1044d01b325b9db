//! kilo.db's kept versions ([`crate::history`], kind `db_snapshot`): a
//! superseded version's metadata and an inline one's bytes
//! are kept as a history row, and a chunked one's manifest stays in
//! [`KILO_DB`]'s table, naming its chunks, until retention drops it. A
//! version in the single-key layout from before chunks is not kept: its
//! key goes as before.

use super::{KILO_DB, SnapshotMeta, StorageKind, rules};
use crate::{
    DomainError, Refusal,
    history::{
        self, Kind, RetentionPolicy, retention,
        versions::{self, Current, Superseded},
    },
    params,
    sql::{RowExt, SqlStore},
};

/// Keeps the current version as history, before a write replaces it: at
/// the seq history recorded for it (a restored version's is its restore's,
/// not its bytes' watermark), and a restore's "no kilo.db" as a deletion.
pub(super) fn keep_current(store: &impl SqlStore, now_ms: i64) -> Result<(), DomainError> {
    let recorded = versions::current(store, Kind::DbSnapshot, "")?;
    match rules::current(store)? {
        // The single-key layout: its key is deleted by the caller.
        Some((_, Some(_))) => Ok(()),
        Some((meta, None)) => {
            let inline = match meta.storage {
                StorageKind::Inline => rules::inline_bytes(store)?,
                StorageKind::Kv => None,
            };
            let body = serde_json::to_string(&meta).map_err(|err| {
                DomainError::Storage(format!("encoding a snapshot's metadata: {err}"))
            })?;
            let seq = recorded
                .filter(|c| c.version == meta.version)
                .map_or(meta.event_watermark, |c| c.seq);
            let old = Superseded {
                kind: Kind::DbSnapshot,
                key: "",
                version: meta.version,
                seq,
                created_at: meta.created_at,
                deleted: false,
                body: Some(&body),
                inline: inline.as_deref(),
            };
            versions::keep(store, &old, now_ms)
        }
        None => versions::keep_deletion(store, Kind::DbSnapshot, recorded, now_ms),
    }
}

/// Records `meta` (just switched to) as the current version, then lets
/// retention drop what expired (their chunks readable until
/// `readable_until`).
pub(super) fn made_current(
    store: &impl SqlStore,
    meta: &SnapshotMeta,
    (now_ms, policy): (i64, &RetentionPolicy),
    readable_until: i64,
) -> Result<(), DomainError> {
    // The log's last seq when it was written: its watermark may lag (a push at a runtime's
    // start covers nothing yet), and a point must never resolve to a version written after it.
    let seq = meta
        .event_watermark
        .max(crate::event_log::state(store)?.last_seq);
    let current = Current {
        version: meta.version,
        seq,
        created_at: meta.created_at,
        deleted: false,
    };
    record_current(store, &current, (now_ms, policy), readable_until)
}

/// Records `current` as the current version (a push's, or a restore's), then lets retention
/// drop what expired (their chunks readable until `readable_until`).
pub(super) fn record_current(
    store: &impl SqlStore,
    current: &Current,
    (now_ms, policy): (i64, &RetentionPolicy),
    readable_until: i64,
) -> Result<(), DomainError> {
    retention::made_current(
        store,
        Kind::DbSnapshot,
        current,
        (now_ms, policy),
        |version| KILO_DB.drop_manifest(store, version, readable_until),
    )
}

/// `DELETE`: the current version goes for good (its chunks readable until
/// `readable_until`, then collected unless a kept version names them);
/// the kept versions stay. Answers the single-key layout's key, if the
/// snapshot had one (404 `snapshot_not_found` without a snapshot).
pub(super) fn remove(
    store: &impl SqlStore,
    readable_until: i64,
) -> Result<Option<String>, DomainError> {
    let Some((_, key)) = rules::current(store)? else {
        return Err(DomainError::NotFound(Refusal::new(
            "snapshot_not_found",
            "the agent has no snapshot",
        )));
    };
    rules::clear_current(store, readable_until)?;
    versions::clear_current(store, Kind::DbSnapshot, "")?;
    Ok(key)
}

/// A kept version's metadata and an inline one's bytes; 404
/// `version_not_found` for a version not kept or a deletion.
pub(super) fn find(
    store: &impl SqlStore,
    version: u64,
) -> Result<(SnapshotMeta, Option<Vec<u8>>), DomainError> {
    let not_found = || history::version_not_found(Kind::DbSnapshot, version);
    let kept = versions::find(store, Kind::DbSnapshot, version)?.ok_or_else(not_found)?;
    let body = kept.body.ok_or_else(not_found)?;
    let meta = serde_json::from_str(&body).map_err(|err| {
        DomainError::Storage(format!(
            "kept snapshot version {version} does not read: {err}"
        ))
    })?;
    Ok((meta, kept.inline))
}

/// Drops every kept version and its manifest (an import replaces the
/// agent; destroy drops every manifest itself).
pub fn drop_all(store: &impl SqlStore) -> Result<(), DomainError> {
    let rows = store.execute(
        "SELECT version FROM history_versions WHERE kind = ?1",
        params![Kind::DbSnapshot.as_str()],
    )?;
    for row in rows {
        KILO_DB.drop_manifest(store, row.uint(0)?, 0)?;
    }
    history::wipe_kind(store, Kind::DbSnapshot)
}
