//! A snapshot staged by an import: its bytes are already stored (KV key or
//! inline bytes here), and the import's commit switches the metadata to it
//! in the same step that replaces the rest of the agent.
//!
//! The staged row keeps its KV key out of sweeps (see
//! [`super::rules::keys_in_use`]) for as long as the import lasts, however
//! long that is; once the import commits, aborts or is superseded, the row
//! goes and a sweep removes a key nothing names any more.

use super::{StagedSnapshot, rules};
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};

/// The table: at most one row, present once the import gave its snapshot
/// (`version` NULL when the manifest said `"snapshot": null`).
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS snapshot_staged (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER,
    sha256 TEXT,
    size INTEGER,
    event_watermark INTEGER,
    kv_key TEXT,
    inline BLOB
)";

/// Whether the import in progress already gave its snapshot (or `null`).
pub fn is_given(store: &impl SqlStore) -> Result<bool, DomainError> {
    Ok(store
        .first_row("SELECT 1 FROM snapshot_staged WHERE id = 1", Vec::new())?
        .is_some())
}

/// Records the import's snapshot (or its absence). A KV snapshot's
/// reservation is released: from here on the staged row keeps its key.
pub fn record(store: &impl SqlStore, staged: Option<&StagedSnapshot>) -> Result<(), DomainError> {
    let Some(staged) = staged else {
        store.run("INSERT INTO snapshot_staged (id) VALUES (1)", Vec::new())?;
        return Ok(());
    };
    store.run(
        "INSERT INTO snapshot_staged (id, version, sha256, size, event_watermark, kv_key, inline)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            staged.version,
            staged.sha256.as_str(),
            staged.size,
            staged.event_watermark,
            staged.kv_key.as_deref(),
            staged.inline.clone()
        ],
    )?;
    rules::release(store, staged.version)
}

/// The staged KV key, which sweeps must keep.
pub(super) fn key(store: &impl SqlStore) -> Result<Option<String>, DomainError> {
    Ok(store
        .first_row(
            "SELECT kv_key FROM snapshot_staged WHERE id = 1 AND kv_key IS NOT NULL",
            Vec::new(),
        )?
        .map(|row| row.text(0).map(str::to_owned))
        .transpose()?)
}

/// Forgets the staged snapshot (the import ended without committing); a
/// sweep then removes its KV key.
pub fn clear(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run("DELETE FROM snapshot_staged", Vec::new())?;
    Ok(())
}

/// The import's commit: the current snapshot goes and the staged one (if
/// any) becomes current, in the caller's transaction. Returns whether the
/// agent now has a snapshot. The superseded KV key is left for a sweep.
pub fn commit(store: &impl SqlStore, now_ms: i64) -> Result<bool, DomainError> {
    let staged = load(store)?;
    rules::clear_current(store)?;
    clear(store)?;
    let Some(staged) = staged else {
        return Ok(false);
    };
    let version = match staged.kv_key {
        None => rules::next_version(store)?,
        Some(_) => staged.version,
    };
    rules::switch(
        store,
        &rules::Switch {
            version,
            sha256: &staged.sha256,
            size: staged.size,
            event_watermark: Some(staged.event_watermark),
            inline: staged.inline.as_deref(),
            kv_key: staged.kv_key.as_deref(),
            chunk_size: None,
            now_ms,
        },
    )?;
    Ok(true)
}

fn load(store: &impl SqlStore) -> Result<Option<StagedSnapshot>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT version, sha256, size, event_watermark, kv_key, inline
         FROM snapshot_staged WHERE id = 1 AND version IS NOT NULL",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    let inline = match row.get(5) {
        Some(crate::sql::SqlValue::Blob(bytes)) => Some(bytes.clone()),
        _ if row.opt_text(4)?.is_none() => Some(Vec::new()),
        _ => None,
    };
    Ok(Some(StagedSnapshot {
        version: row.uint(0)?,
        sha256: row.text(1)?.to_owned(),
        size: row.uint(2)?,
        event_watermark: row.uint(3)?,
        kv_key: row.opt_text(4)?.map(str::to_owned),
        inline,
    }))
}
