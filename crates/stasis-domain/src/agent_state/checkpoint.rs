//! The agent's checkpoint: one JSON document, stored exactly as given.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::{MAX_DOCUMENT_BYTES, checks};
use crate::{
    DomainError, Refusal,
    history::{self, Kind, documents},
    object_env::ObjectEnv,
    params,
    sql::{RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The stored checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The document, JSON text exactly as stored.
    pub document: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was stored, ms since the epoch.
    pub updated_at: i64,
}

/// The answer to `PutCheckpoint`.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointStored {
    /// The document's size in bytes.
    pub size: u64,
    /// When it was stored, ms since the epoch.
    pub updated_at: i64,
}

/// Stores `document`, replacing any earlier checkpoint, which is kept as
/// history. Over [`MAX_DOCUMENT_BYTES`] → 413 `checkpoint_too_large`.
pub fn put(
    store: &impl SqlStore,
    document: &str,
    env: &ObjectEnv,
) -> Result<CheckpointStored, DomainError> {
    let now_ms = env.now_ms;
    checks::json_text(document, MAX_DOCUMENT_BYTES)
        .map_err(|b| b.for_call("the checkpoint", "checkpoint_too_large"))?;
    keep_previous(store, false, env)?;
    write(store, document, now_ms)?;
    Ok(CheckpointStored {
        size: checks::byte_len(document),
        updated_at: now_ms,
    })
}

/// Stores the one checkpoint row, replacing any (import; validated).
pub(super) fn write(store: &impl SqlStore, document: &str, now_ms: i64) -> Result<(), DomainError> {
    store.run(
        "INSERT INTO checkpoint (id, document, updated_at) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at",
        params![document, now_ms],
    )?;
    Ok(())
}

/// The checkpoint, or `checkpoint_not_found`.
pub fn get(store: &impl SqlStore) -> Result<Checkpoint, DomainError> {
    load(store)?.ok_or_else(not_found)
}

/// The checkpoint, if one is stored.
pub fn load(store: &impl SqlStore) -> Result<Option<Checkpoint>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT document, updated_at FROM checkpoint WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    let document = row.text(0)?.to_owned();
    Ok(Some(Checkpoint {
        size: checks::byte_len(&document),
        document,
        updated_at: row.int(1)?,
    }))
}

/// True when a checkpoint is stored (without reading the document).
pub fn exists(store: &impl SqlStore) -> Result<bool, DomainError> {
    let row = store.first_row("SELECT EXISTS (SELECT 1 FROM checkpoint)", Vec::new())?;
    Ok(row.map(|row| row.int(0)).transpose()?.unwrap_or(0) != 0)
}

/// Removes the checkpoint (kept as history, the deletion a version of
/// its own); `checkpoint_not_found` when there is none.
pub fn delete(store: &impl SqlStore, env: &ObjectEnv) -> Result<(), DomainError> {
    if !exists(store)? {
        return Err(not_found());
    }
    keep_previous(store, true, env)?;
    store.run("DELETE FROM checkpoint WHERE id = 1", Vec::new())?;
    Ok(())
}

/// Keeps the checkpoint a write replaces as history.
pub(super) fn keep_previous(
    store: &impl SqlStore,
    deletes: bool,
    env: &ObjectEnv,
) -> Result<(), DomainError> {
    let previous = load(store)?;
    let previous = previous
        .as_ref()
        .map(|p| (p.document.as_str(), p.updated_at));
    let now = (env.now_ms, &env.retention);
    documents::write(store, (Kind::Checkpoint, ""), previous, deletes, now).map(drop)
}

/// Version `version` of the checkpoint: the current one or a kept one
/// (404 `version_not_found`; a deletion is 404 `checkpoint_not_found`).
pub fn get_version(store: &impl SqlStore, version: u64) -> Result<Checkpoint, DomainError> {
    let current = history::versions::current(store, Kind::Checkpoint, "")?;
    if current.is_some_and(|c| c.version == version && !c.deleted) {
        return get(store);
    }
    let (document, updated_at) =
        documents::read(store, (Kind::Checkpoint, ""), version)?.ok_or_else(not_found)?;
    Ok(Checkpoint {
        size: checks::byte_len(&document),
        document,
        updated_at,
    })
}

fn not_found() -> DomainError {
    DomainError::NotFound(Refusal::new(
        "checkpoint_not_found",
        "the agent has no checkpoint",
    ))
}
