//! A workspace staged by an import: its head is recorded as it arrives,
//! its pages and chunks are uploaded as the manifest goes on, and once all
//! came the runtime checks them and stages a version ([`stage`]) that
//! names them (one reference each, so no collection takes them), not yet
//! current. The import's commit makes it current in the same step that
//! replaces the rest of the agent ([`commit`]); an import that ends
//! otherwise drops it ([`clear`]).

use super::{CommitArgs, WorkspaceVersion, rules};
use crate::{
    DomainError, Refusal, params,
    sql::{RowExt, SqlStore},
    workspace::pages::ManifestHead,
};
use serde::{Deserialize, Serialize};

/// The table: at most one row, present once the import gave its
/// workspace; `version` set once it is staged.
pub(super) const TABLE: &str = "CREATE TABLE IF NOT EXISTS workspace_staged (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    head TEXT NOT NULL,
    event_watermark INTEGER,
    version INTEGER,
    files INTEGER,
    chunk_count INTEGER
)";

/// The head an import gave, and its watermark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedHead {
    /// The head.
    pub head: ManifestHead,
    /// Its watermark, if given.
    pub event_watermark: Option<u64>,
}

/// Records the import's workspace head; a second one is refused.
pub fn record_head(store: &impl SqlStore, staged: &StagedHead) -> Result<(), DomainError> {
    if head(store)?.is_some() {
        return Err(DomainError::invalid(
            "invalid_manifest",
            "workspace: appears twice in the import",
        ));
    }
    store.run(
        "INSERT INTO workspace_staged (id, head, event_watermark) VALUES (1, ?1, ?2)",
        params![encode(&staged.head)?, staged.event_watermark],
    )?;
    Ok(())
}

/// The head the import gave, if any.
pub fn head(store: &impl SqlStore) -> Result<Option<StagedHead>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT head, event_watermark FROM workspace_staged WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    Ok(Some(StagedHead {
        head: decode(row.text(0)?)?,
        event_watermark: row.uint(1).ok(),
    }))
}

/// Stages the checked version: the store must hold every page and chunk;
/// they are referenced from here on.
pub fn stage(store: &impl SqlStore, args: &CommitArgs) -> Result<(), DomainError> {
    if head(store)?.is_none() {
        return Err(DomainError::Conflict(Refusal::new(
            "import_superseded",
            "the import staging this workspace is gone",
        )));
    }
    drop_staged_version(store)?;
    let (version, chunk_count) = rules::add_version(store, args)?;
    store.run(
        "UPDATE workspace_staged SET version = ?1, files = ?2, chunk_count = ?3 WHERE id = 1",
        params![version, args.files, chunk_count],
    )?;
    Ok(())
}

/// The import's commit: the current version goes and the staged one (if
/// any) becomes current. Returns whether the agent now has a workspace.
pub fn commit(store: &impl SqlStore, now_ms: i64) -> Result<bool, DomainError> {
    let staged = store.first_row(
        "SELECT version, head, files, chunk_count, event_watermark
         FROM workspace_staged WHERE id = 1 AND version IS NOT NULL",
        Vec::new(),
    )?;
    // An import replaces the agent whole: the old version's readers are
    // not waited for.
    rules::clear_current(store, 0)?;
    store.run("DELETE FROM workspace_staged", Vec::new())?;
    let Some(row) = staged else {
        return Ok(false);
    };
    let event_watermark = match row.uint(4) {
        Ok(seq) => seq,
        Err(_) => crate::event_log::state(store)?.last_seq,
    };
    let version = WorkspaceVersion {
        version: row.uint(0)?,
        head: decode(row.text(1)?)?,
        files: row.uint(2)?,
        chunk_count: row.uint(3)?,
        event_watermark,
        created_at: now_ms,
    };
    rules::make_current(store, &version)?;
    Ok(true)
}

/// Forgets the staged workspace (the import ended without committing); a
/// collection then takes the chunks only it named.
pub fn clear(store: &impl SqlStore) -> Result<(), DomainError> {
    drop_staged_version(store)?;
    store.run("DELETE FROM workspace_staged", Vec::new())?;
    Ok(())
}

fn drop_staged_version(store: &impl SqlStore) -> Result<(), DomainError> {
    let version = store
        .first_row(
            "SELECT version FROM workspace_staged WHERE id = 1 AND version IS NOT NULL",
            Vec::new(),
        )?
        .map(|row| row.uint(0))
        .transpose()?;
    if let Some(version) = version {
        rules::drop_version(store, version, 0)?;
    }
    Ok(())
}

fn encode(head: &ManifestHead) -> Result<String, DomainError> {
    serde_json::to_string(head)
        .map_err(|err| DomainError::Storage(format!("encoding a workspace head: {err}")))
}

fn decode(text: &str) -> Result<ManifestHead, DomainError> {
    serde_json::from_str(text).map_err(|err| {
        DomainError::Storage(format!("a staged workspace head does not read: {err}"))
    })
}
