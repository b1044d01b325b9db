//! A snapshot staged by an import: its bytes are already stored (chunks
//! named by a manifest under its version, inline bytes here, or, staged
//! before chunks, one KV key), and the import's commit switches the
//! metadata to it in the same step that replaces the rest of the agent.
//!
//! The staged row keeps its manifest's chunks (one reference each) and its
//! KV key (see [`KeysInUse`](super::SnapshotCall::KeysInUse)) from
//! collection and sweeps for as long as the import lasts, however long that
//! is; once the import commits, aborts or is superseded, the row goes, and
//! a collection or sweep removes what nothing names any more.

use super::{KILO_DB, StagedSnapshot, import_chunks, manifest::chunk_count, rules};
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
/// reservation is released: from here on the staged row keeps its key; a
/// chunked one's manifest passes from the import's mark to the row.
pub fn record(store: &impl SqlStore, staged: Option<&StagedSnapshot>) -> Result<(), DomainError> {
    let Some(staged) = staged else {
        store.run("INSERT INTO snapshot_staged (id) VALUES (1)", Vec::new())?;
        return Ok(());
    };
    if let Some(chunk_size) = staged.chunk_size {
        let count = chunk_count(staged.size, chunk_size);
        let recorded = import_chunks::release(store, staged.version, count)?;
        if recorded != chunk_size {
            return Err(DomainError::Storage(format!(
                "import snapshot version {} has chunks of {recorded} bytes, not {chunk_size}",
                staged.version
            )));
        }
    }
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

/// Forgets the staged snapshot and any an import is still writing (the
/// import ended without committing); a sweep then removes its KV key and
/// collects the chunks only it named.
pub fn clear(store: &impl SqlStore) -> Result<(), DomainError> {
    if let Some(staged) = load(store)?
        && staged.chunk_size.is_some()
    {
        KILO_DB.drop_manifest(store, staged.version, 0)?;
    }
    import_chunks::abandon_all(store)?;
    forget(store)
}

fn forget(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run("DELETE FROM snapshot_staged", Vec::new())?;
    Ok(())
}

/// The import's commit: the current snapshot goes and the staged one (if
/// any) becomes current, in the caller's transaction. Returns whether the
/// agent now has a snapshot. The superseded KV key is left for a sweep.
pub fn commit(store: &impl SqlStore, now_ms: i64) -> Result<bool, DomainError> {
    let staged = load(store)?;
    // An import replaces the agent whole: the old version's readers are
    // not waited for.
    rules::clear_current(store, 0)?;
    // The staged manifest becomes current: only the row goes.
    forget(store)?;
    import_chunks::abandon_all(store)?;
    let Some(staged) = staged else {
        return Ok(false);
    };
    let version = match (&staged.kv_key, staged.chunk_size) {
        (None, None) => KILO_DB.next_version(store)?,
        _ => staged.version,
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
            chunk_size: staged.chunk_size,
            now_ms,
            readable_until: 0,
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
    let version = row.uint(0)?;
    let kv_key = row.opt_text(4)?.map(str::to_owned);
    // An inline snapshot's version is 0 until it becomes current, so only a
    // chunked one has a manifest under its version.
    let chunk_size = match (&kv_key, row.get(5)) {
        (None, None | Some(crate::sql::SqlValue::Null)) if version > 0 => {
            KILO_DB.manifest(store, version)?.map(|(size, _)| size)
        }
        _ => None,
    };
    let inline = match row.get(5) {
        Some(crate::sql::SqlValue::Blob(bytes)) => Some(bytes.clone()),
        _ if kv_key.is_none() && chunk_size.is_none() => Some(Vec::new()),
        _ => None,
    };
    Ok(Some(StagedSnapshot {
        version,
        sha256: row.text(1)?.to_owned(),
        size: row.uint(2)?,
        event_watermark: row.uint(3)?,
        kv_key,
        inline,
        chunk_size,
    }))
}
