//! The agent's history: the versions its kilo.db, workspace, checkpoint and
//! memory had before they were superseded, kept under a retention policy
//! and named pins.
//!
//! # How it works
//!
//! - **Versions.** Every write of a kind supersedes the version before it;
//!   the superseded one becomes a row of `history_versions` (`kind`, `key`
//!   (a memory key; `''` for the other kinds), `version`, `seq`,
//!   `created_at`, `superseded_at`, `deleted`, and its `body` / `inline`
//!   bytes for the kinds whose content lives in SQL). The current version of
//!   each `(kind, key)` is a row of `history_current`, so that every version
//!   has a number, a seq and a time. A deletion of a checkpoint or a memory
//!   key is a version too (`deleted`), so that "what was it at seq S"
//!   has an answer.
//! - **Seq.** A version's seq is the point of the log it belongs to: a
//!   kilo.db or workspace version's is its watermark (the one given, else
//!   the log's last seq at its commit); a checkpoint or memory version's is
//!   the log's last seq when it was written. A point `S` resolves, per
//!   `(kind, key)`, to the newest version whose seq is at most `S`.
//! - **Chunks.** A kilo.db or workspace version's content is its manifest
//!   in the chunk store's owner tables (`crate::chunk_store`), which keeps
//!   its references while the version is kept: a version dropped by
//!   retention releases them through the owner's manifest drop (grace, then
//!   collection), so collection removes exactly what no kept version names.
//!   This module never touches the owners' tables: the caller drops what
//!   [`retention::expired`] hands back.
//! - **Retention** ([`retention`]): on each write of a kind, at most
//!   [`retention::DROP_BATCH`] of its expired versions go; a version is kept
//!   while it is young enough, or the last of its bucket within a tier, or
//!   held by a pin.
//! - **Pins** ([`pins`]): a named seq; every version its point resolves to
//!   stays until the pin goes.
//!
//! History does not travel in an export; an import or a destroy drops it.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

mod call;
pub mod documents;
pub mod pins;
pub mod point;
pub mod retention;
pub mod versions;

pub use call::{HistoryCall, HistoryReply, execute, is_write};
pub use pins::Pin;
pub use point::{Point, PointBody, StateAt, VersionAt};
pub use retention::RetentionPolicy;
pub use versions::{HistoryPage, VersionInfo};

use crate::{
    DomainError, Refusal,
    sql::{SqlStore, StorageError},
};
use serde::{Deserialize, Serialize};

/// A kind of thing whose versions the agent keeps.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// The kilo.db snapshot.
    DbSnapshot,
    /// The workspace.
    Workspace,
    /// The checkpoint document.
    Checkpoint,
    /// One memory key's values.
    Memory,
}

impl Kind {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DbSnapshot => "db_snapshot",
            Self::Workspace => "workspace",
            Self::Checkpoint => "checkpoint",
            Self::Memory => "memory",
        }
    }

    /// The kind named `name`, or 400 `invalid_request`.
    pub fn parse(name: &str) -> Result<Self, DomainError> {
        match name {
            "db_snapshot" => Ok(Self::DbSnapshot),
            "workspace" => Ok(Self::Workspace),
            "checkpoint" => Ok(Self::Checkpoint),
            "memory" => Ok(Self::Memory),
            other => Err(DomainError::invalid(
                "invalid_request",
                format!("kind must be db_snapshot, workspace, checkpoint or memory; got {other:?}"),
            )),
        }
    }
}

const STATEMENTS: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS history_versions (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        version INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        superseded_at INTEGER NOT NULL,
        deleted INTEGER NOT NULL,
        body TEXT,
        inline BLOB,
        PRIMARY KEY (kind, key, version)
    )",
    "CREATE INDEX IF NOT EXISTS history_versions_by_time
        ON history_versions (kind, created_at)",
    "CREATE TABLE IF NOT EXISTS history_current (
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        version INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        deleted INTEGER NOT NULL,
        PRIMARY KEY (kind, key)
    )",
    // The newest version handed out per kind whose versions are not a
    // chunk store owner's (checkpoint, memory): never reused.
    "CREATE TABLE IF NOT EXISTS history_counter (
        kind TEXT PRIMARY KEY,
        last_version INTEGER NOT NULL
    )",
    "CREATE TABLE IF NOT EXISTS history_pins (
        name TEXT PRIMARY KEY,
        seq INTEGER NOT NULL,
        created_at INTEGER NOT NULL
    )",
];

/// Creates the history tables if they are missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    for statement in STATEMENTS {
        store.run(statement, Vec::new())?;
    }
    Ok(())
}

/// Forgets every version row and pin (the agent is destroyed or replaced;
/// the owners drop their manifests themselves). The counters stay, so a
/// version number is never handed out twice.
pub fn wipe(store: &impl SqlStore) -> Result<(), DomainError> {
    for table in ["history_versions", "history_current", "history_pins"] {
        store.run(&format!("DELETE FROM {table}"), Vec::new())?;
    }
    Ok(())
}

/// Forgets the rows of one kind (an import replaced it).
pub fn wipe_kind(store: &impl SqlStore, kind: Kind) -> Result<(), DomainError> {
    for table in ["history_versions", "history_current"] {
        let statement = format!("DELETE FROM {table} WHERE kind = ?1");
        store.run(&statement, crate::params![kind.as_str()])?;
    }
    Ok(())
}

/// The 404 of a version the agent does not keep.
pub fn version_not_found(kind: Kind, version: u64) -> DomainError {
    DomainError::NotFound(Refusal::new(
        "version_not_found",
        format!("the agent keeps no {} version {version}", kind.as_str()),
    ))
}
