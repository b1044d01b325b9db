//! The agent's workspace versions: the chunk store's second owner (after
//! kilo.db's snapshots, [`crate::chunk_store`] "# Owners").
//!
//! A version is a paged tree manifest ([`crate::workspace::pages`]): its
//! head (small: chunking, root hash, counts, each page's sha256 and size)
//! is kept in the agent object's SQL, and its pages and its files' chunks
//! are chunks of the agent's one chunk store, uploaded by the same routes
//! and code as kilo.db's and named by the version's references, so a chunk
//! both (or two versions) name is stored once.
//!
//! - **References**: the pages, in the owner's manifest row ([`WORKSPACE`],
//!   at most [`crate::workspace::pages::MAX_PAGES`] of them: one row); the
//!   distinct file chunks, in parts of [`REFS_PER_PART`] in a table of their
//!   own (a tree naming 100,000 chunks does not fit one Durable Object row),
//!   each counted once in the chunk table.
//! - **Commit** ([`saga::commit`]): the preconditions (`If-Match` on the
//!   root hash, `If-None-Match: *`) before anything is read; every page
//!   read from KV and checked one at a time ([`crate::workspace::pages::PagesChecker`],
//!   the limits, the root hash); then one object call ([`WorkspaceCall::Commit`])
//!   checks the preconditions again, that the store holds every page and
//!   chunk (409 `chunks_missing`), adds the version and its references,
//!   makes it current and drops the superseded one, whose chunks no other
//!   version names are collected after the grace.
//! - **Delete** and the agent's **wipe** drop the references the same way.
//!
//! Superseded and deleted versions are kept as history under the retention
//! policy ([`kept`], [`crate::history`]). Nothing here holds a manifest whole:
//! the pages pass one at a time, and the object sees the head and the
//! distinct chunk names.

mod call;
pub mod kept;
pub mod operations;
pub mod ports;
pub mod restore;
mod rules;
pub mod saga;
pub mod staged;

pub use call::{CommitArgs, WorkspaceCall, WorkspaceReply, execute, is_write};
pub use rules::{current, wipe};

use crate::{
    DomainError, Refusal,
    chunk_store::{self, Owner},
    sql::{SqlStore, StorageError},
    workspace::{ContentHash, pages::ManifestHead},
};
use serde::{Deserialize, Serialize};

/// Workspaces as an owner of chunk store versions: the manifest row of a
/// version names its pages.
pub const WORKSPACE: Owner = Owner {
    manifests: "workspace_manifests",
    counter: "workspace_counter",
    marks: &[],
};

/// File chunks named per row of the references table: under 1 MB of raw
/// hashes, half a Durable Object row.
pub const REFS_PER_PART: usize = 30_000;

/// The code of an agent without a workspace (404).
pub const NOT_FOUND: &str = "workspace_not_found";

const STATEMENTS: &[&str] = &[
    // The current version; one row at most. `head` is the manifest head's
    // JSON (its pages listed).
    "CREATE TABLE IF NOT EXISTS workspace_current (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        version INTEGER NOT NULL,
        head TEXT NOT NULL,
        files INTEGER NOT NULL,
        chunk_count INTEGER NOT NULL,
        event_watermark INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    )",
    staged::TABLE,
    // The distinct file chunks each version names, raw sha256s
    // concatenated, in parts.
    "CREATE TABLE IF NOT EXISTS workspace_chunk_refs (
        version INTEGER NOT NULL,
        part INTEGER NOT NULL,
        hashes BLOB NOT NULL,
        PRIMARY KEY (version, part)
    )",
];

/// Creates the workspace tables (and the chunk table) if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    chunk_store::migrate(store)?;
    WORKSPACE.migrate(store)?;
    crate::history::migrate(store)?;
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}

/// A stored workspace version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkspaceVersion {
    /// Counts up from 1 per agent, never reused.
    pub version: u64,
    /// The manifest head it was committed with.
    pub head: ManifestHead,
    /// Regular files.
    pub files: u64,
    /// Distinct chunks its files name (pages not counted).
    pub chunk_count: u64,
    /// The agent's last event seq the workspace reflects.
    pub event_watermark: u64,
    /// When it was committed, ms since the epoch.
    pub created_at: i64,
}

impl WorkspaceVersion {
    /// The HTTP entity tag: the root hash, quoted.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.head.root_hash)
    }
}

/// A commit's answer: the current version, and whether the commit made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The current version.
    pub version: WorkspaceVersion,
    /// False when the pushed tree was the current one already (nothing
    /// changed).
    pub created: bool,
}

/// The preconditions of a commit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Precondition {
    /// `If-Match`: `Some(None)` for `*` (some version must be current),
    /// `Some(Some(list))` for root hashes, one of which must be current.
    #[serde(default)]
    pub if_match: Option<Option<Vec<ContentHash>>>,
    /// `If-None-Match: *`: no version may be current.
    #[serde(default)]
    pub if_none_match_any: bool,
}

impl Precondition {
    /// Refuses (412 `precondition_failed`) unless it holds for `current`.
    pub fn check(&self, current: Option<&WorkspaceVersion>) -> Result<(), DomainError> {
        let root = current.map(|v| v.head.root_hash);
        if self.if_none_match_any
            && let Some(root) = root
        {
            return Err(failed(format!(
                "If-None-Match: * was given but the agent has a workspace (its ETag is \"{root}\")"
            )));
        }
        match (&self.if_match, root) {
            (None, _) | (Some(None), Some(_)) => Ok(()),
            (Some(Some(list)), Some(root)) if list.contains(&root) => Ok(()),
            (Some(_), Some(root)) => Err(failed(format!(
                "If-Match does not name the current workspace (its ETag is \"{root}\")"
            ))),
            (Some(_), None) => Err(failed(
                "If-Match was given but the agent has no workspace".to_owned(),
            )),
        }
    }
}

fn failed(message: String) -> DomainError {
    DomainError::PreconditionFailed(Refusal::new("precondition_failed", message))
}

/// The 404 of an agent without a workspace.
pub fn not_found() -> DomainError {
    DomainError::NotFound(Refusal::new(NOT_FOUND, "the agent has no workspace"))
}
