//! The workspace's kept versions ([`crate::history`], kind `workspace`): a
//! superseded version's head is kept as a history row, and
//! its references (its pages in [`super::WORKSPACE`]'s manifest row, its chunks in
//! `workspace_chunk_refs`) stay, naming its chunks, until retention drops
//! it.

use super::{WorkspaceVersion, not_found, rules};
use crate::{
    DomainError,
    history::{
        self, Kind, RetentionPolicy, retention,
        versions::{self, Current, Superseded},
    },
    params,
    sql::{RowExt, SqlStore},
};

/// Keeps `previous` (the version a commit replaced) as history: at the
/// seq history recorded for it (a restored version's is its restore's, not
/// its files' watermark), and a restore's "no workspace" as a deletion.
pub(super) fn keep(
    store: &impl SqlStore,
    previous: Option<&WorkspaceVersion>,
    now_ms: i64,
) -> Result<(), DomainError> {
    let recorded = versions::current(store, Kind::Workspace, "")?;
    let Some(previous) = previous else {
        return versions::keep_deletion(store, Kind::Workspace, recorded, now_ms);
    };
    let seq = recorded
        .filter(|c| c.version == previous.version)
        .map_or(previous.event_watermark, |c| c.seq);
    let body = serde_json::to_string(previous)
        .map_err(|err| DomainError::Storage(format!("encoding a workspace version: {err}")))?;
    let old = Superseded {
        kind: Kind::Workspace,
        key: "",
        version: previous.version,
        seq,
        created_at: previous.created_at,
        deleted: false,
        body: Some(&body),
        inline: None,
    };
    versions::keep(store, &old, now_ms)
}

/// Records `version` (just made current) and lets retention drop what
/// expired (their chunks readable until `readable_until`).
pub(super) fn made_current(
    store: &impl SqlStore,
    version: &WorkspaceVersion,
    (now_ms, policy): (i64, &RetentionPolicy),
    readable_until: i64,
) -> Result<(), DomainError> {
    // The log's last seq when it was written: its watermark may lag (a push at a runtime's
    // start covers nothing yet), and a point must never resolve to a version written after it.
    let seq = version
        .event_watermark
        .max(crate::event_log::state(store)?.last_seq);
    let current = Current {
        version: version.version,
        seq,
        created_at: version.created_at,
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
        Kind::Workspace,
        current,
        (now_ms, policy),
        |version| rules::drop_version(store, version, readable_until),
    )
}

/// `DELETE`: the current version goes for good (its chunks readable until
/// `readable_until`, then collected unless a kept version names them);
/// the kept versions stay (404 `workspace_not_found` without one).
pub(super) fn remove(store: &impl SqlStore, readable_until: i64) -> Result<(), DomainError> {
    if rules::current(store)?.is_none() {
        return Err(not_found());
    }
    rules::clear_current(store, readable_until)?;
    versions::clear_current(store, Kind::Workspace, "")
}

/// Version `version`: the current one, or a kept one; 404
/// `version_not_found` for a version not kept or a deletion.
pub(super) fn find(store: &impl SqlStore, version: u64) -> Result<WorkspaceVersion, DomainError> {
    if let Some(current) = rules::current(store)?
        && current.version == version
    {
        return Ok(current);
    }
    let not_found = || history::version_not_found(Kind::Workspace, version);
    let kept = versions::find(store, Kind::Workspace, version)?.ok_or_else(not_found)?;
    let body = kept.body.ok_or_else(not_found)?;
    serde_json::from_str(&body).map_err(|err| {
        DomainError::Storage(format!(
            "kept workspace version {version} does not read: {err}"
        ))
    })
}

/// Drops every kept version and its references (an import replaces the
/// agent).
pub fn drop_all(store: &impl SqlStore) -> Result<(), DomainError> {
    let rows = store.execute(
        "SELECT version FROM history_versions WHERE kind = ?1",
        params![Kind::Workspace.as_str()],
    )?;
    for row in rows {
        rules::drop_version(store, row.uint(0)?, 0)?;
    }
    history::wipe_kind(store, Kind::Workspace)
}
