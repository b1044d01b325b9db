//! The object's side of a snapshot: versions, reservations and the
//! metadata switch. Which KV keys the rows name is [`super::keys`].

use super::{KILO_DB, MAX_INLINE_LIMIT, Precondition, SnapshotMeta, StorageKind};
use crate::{
    DomainError, Refusal, event_log, params,
    sql::{RowExt, SqlStore},
};

/// Refuses a snapshot over the snapshot limit.
pub fn check_size(size: u64, limit: u64) -> Result<(), DomainError> {
    if size > limit {
        return Err(too_large(limit));
    }
    Ok(())
}

/// The 413 for a snapshot over `limit`.
pub fn too_large(limit: u64) -> DomainError {
    DomainError::too_large(
        "snapshot_too_large",
        format!("a snapshot may hold at most {limit} bytes"),
        limit,
    )
}

/// The current snapshot's metadata and, for a KV snapshot, its key.
pub fn current(
    store: &impl SqlStore,
) -> Result<Option<(SnapshotMeta, Option<String>)>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT version, sha256, size, storage, kv_key, event_watermark, created_at
         FROM snapshot_meta WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    let storage = match row.text(3)? {
        "kv" | "chunks" => StorageKind::Kv,
        _ => StorageKind::Inline,
    };
    let meta = SnapshotMeta {
        version: row.uint(0)?,
        sha256: row.text(1)?.to_owned(),
        size: row.uint(2)?,
        storage,
        event_watermark: row.uint(5)?,
        created_at: row.int(6)?,
    };
    Ok(Some((meta, row.opt_text(4)?.map(str::to_owned))))
}

/// The bytes of the inline snapshot.
pub fn inline_bytes(store: &impl SqlStore) -> Result<Option<Vec<u8>>, DomainError> {
    let row = store.first_row("SELECT data FROM snapshot_inline WHERE id = 1", Vec::new())?;
    // An empty blob may come back as NULL from some SQL stores.
    Ok(row.map(|row| row.blob(0).map(<[u8]>::to_vec).unwrap_or_default()))
}

/// Refuses unless `precondition` holds for the current snapshot.
pub fn check_precondition(
    store: &impl SqlStore,
    precondition: Option<&Precondition>,
) -> Result<(), DomainError> {
    let Some(precondition) = precondition else {
        return Ok(());
    };
    let current = current(store)?.map(|(meta, _)| meta);
    if precondition.holds(current.as_ref()) {
        return Ok(());
    }
    let message = match current {
        Some(meta) => format!(
            "If-Match does not name the current snapshot (its ETag is {})",
            meta.etag()
        ),
        None => "If-Match was given but the agent has no snapshot".to_owned(),
    };
    Err(DomainError::PreconditionFailed(Refusal::new(
        "precondition_failed",
        message,
    )))
}

/// Hands out the next version; a KV-sized one is recorded as pending.
pub fn reserve(
    store: &impl SqlStore,
    (size, limit): (u64, u64),
    inline_limit: u64,
    key_prefix: &str,
    now_ms: i64,
) -> Result<(u64, Option<String>), DomainError> {
    check_size(size, limit)?;
    if size <= inline_limit.min(MAX_INLINE_LIMIT) {
        // An inline snapshot names no key: it takes its version when it
        // becomes current, so versions count up in that order.
        return Ok((0, None));
    }
    let version = KILO_DB.next_version(store)?;
    let key = format!("{key_prefix}v{version}");
    store.run(
        "INSERT INTO snapshot_pending (version, kv_key, reserved_at) VALUES (?1, ?2, ?3)",
        params![version, key.as_str(), now_ms],
    )?;
    Ok((version, Some(key)))
}

/// What a put switches the metadata to.
pub struct Switch<'a> {
    /// The reserved version.
    pub version: u64,
    /// Hex sha256 of the bytes.
    pub sha256: &'a str,
    /// Bytes.
    pub size: u64,
    /// The watermark given, if any.
    pub event_watermark: Option<u64>,
    /// The bytes of an inline snapshot.
    pub inline: Option<&'a [u8]>,
    /// The key of a KV snapshot (the layout before chunks).
    pub kv_key: Option<&'a str>,
    /// The chunk size of a chunked snapshot, whose manifest row the caller
    /// added under `version`.
    pub chunk_size: Option<u64>,
    /// ms since the epoch.
    pub now_ms: i64,
    /// Until when the superseded version's chunks stay readable.
    pub readable_until: i64,
}

/// Points the metadata at the new version in one step and returns the new
/// metadata and the superseded KV key, if any.
pub fn switch(
    store: &impl SqlStore,
    new: &Switch<'_>,
) -> Result<(SnapshotMeta, Option<String>), DomainError> {
    let previous = current(store)?;
    // A superseded version is kept as history by the caller
    // (`super::kept`); one in the single-key layout is not, and its
    // manifest row (if any) goes here.
    if let Some((old, Some(_))) = &previous
        && old.version != new.version
    {
        KILO_DB.drop_manifest(store, old.version, new.readable_until)?;
    }
    let superseded = previous.and_then(|(_, key)| key);
    let storage = if new.chunk_size.is_some() {
        "chunks"
    } else if new.kv_key.is_some() {
        "kv"
    } else {
        "inline"
    };
    let event_watermark = match new.event_watermark {
        Some(seq) => seq,
        None => event_log::state(store)?.last_seq,
    };
    store.run(
        "INSERT OR REPLACE INTO snapshot_meta
            (id, version, sha256, size, storage, kv_key, event_watermark, created_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            new.version,
            new.sha256,
            new.size,
            storage,
            new.kv_key,
            event_watermark,
            new.now_ms
        ],
    )?;
    match new.inline {
        Some(bytes) => store.run(
            "INSERT OR REPLACE INTO snapshot_inline (id, data) VALUES (1, ?1)",
            params![bytes.to_vec()],
        )?,
        None => store.run("DELETE FROM snapshot_inline", Vec::new())?,
    }
    release(store, new.version)?;
    let meta = SnapshotMeta {
        version: new.version,
        sha256: new.sha256.to_owned(),
        size: new.size,
        storage: if storage == "inline" {
            StorageKind::Inline
        } else {
            StorageKind::Kv
        },
        event_watermark,
        created_at: new.now_ms,
    };
    Ok((
        meta,
        superseded.filter(|old| Some(old.as_str()) != new.kv_key),
    ))
}

/// Forgets a reservation (its put finished or gave up).
pub fn release(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
    store.run(
        "DELETE FROM snapshot_pending WHERE version = ?1",
        params![version],
    )?;
    Ok(())
}

/// Drops the current snapshot's rows and its manifest's references (its
/// chunks readable until `readable_until`).
pub fn clear_current(store: &impl SqlStore, readable_until: i64) -> Result<(), DomainError> {
    if let Some((meta, _)) = current(store)? {
        KILO_DB.drop_manifest(store, meta.version, readable_until)?;
    }
    store.run("DELETE FROM snapshot_meta", Vec::new())?;
    store.run("DELETE FROM snapshot_inline", Vec::new())?;
    Ok(())
}

/// Forgets the current snapshot's rows but not its manifest (a restore
/// kept it as history).
pub fn clear_rows(store: &impl SqlStore) -> Result<(), DomainError> {
    store.run("DELETE FROM snapshot_meta", Vec::new())?;
    store.run("DELETE FROM snapshot_inline", Vec::new())?;
    Ok(())
}

/// The current snapshot's metadata alone.
pub fn current_meta(store: &impl SqlStore) -> Result<Option<SnapshotMeta>, DomainError> {
    Ok(current(store)?.map(|(meta, _)| meta))
}
