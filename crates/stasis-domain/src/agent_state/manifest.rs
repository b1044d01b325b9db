//! The manifest: everything an agent has, as one document, and its export.
//!
//! Documents (`data`, `metadata`, `checkpoint`, `value`) are JSON text here,
//! written into the serialised manifest as the JSON values they are and read
//! back as text ([`super::raw_json`]). Every field has a
//! default, so `{}` is a manifest (the empty agent); unknown fields are
//! refused at every level, so a misspelt field cannot silently reset state.

use super::{checkpoint, memory, record, sessions};
use crate::{
    DomainError,
    sql::{Row, RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};

/// The format this crate writes and reads.
pub const MANIFEST_FORMAT: &str = "stasis.agent.v1";

/// Everything an agent has.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`]; may be omitted on import.
    pub format: Option<String>,
    /// The agent's record; `None` when not registered.
    pub agent: Option<ManifestAgent>,
    /// Sessions, oldest first.
    pub sessions: Vec<ManifestSession>,
    /// Every stored event, in seq order.
    pub events: Vec<ManifestEvent>,
    /// The checkpoint document, JSON text.
    #[serde(with = "super::raw_json::option")]
    pub checkpoint: Option<String>,
    /// Memory entries, sorted by key.
    pub memory: Vec<ManifestMemory>,
    /// The db-snapshot. Export leaves it `None` for the snapshot rules to
    /// fill; import validates it and hands it back without storing it.
    pub snapshot: Option<ManifestSnapshot>,
}

/// The agent's record in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestAgent {
    /// The agent's role.
    pub role: String,
    /// JSON text; `null` when omitted.
    #[serde(default = "null_text", with = "super::raw_json")]
    pub metadata: String,
}

/// A session in a manifest. On import `first_seq`, `last_seq` and
/// `event_count` are recomputed from the manifest's events; a session with
/// no events keeps the given `first_seq` / `last_seq` (retention may have
/// dropped them) and counts 0. Missing times become the import's time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestSession {
    /// The session's id.
    pub session_id: String,
    /// One of the session statuses; `running` when omitted.
    #[serde(default = "running")]
    pub status: String,
    /// JSON text; `null` when omitted.
    #[serde(default = "null_text", with = "super::raw_json")]
    pub metadata: String,
    /// Seq of its oldest stored event.
    #[serde(default)]
    pub first_seq: u64,
    /// Seq of its newest event.
    #[serde(default)]
    pub last_seq: u64,
    /// Its events in the manifest (informative; recomputed on import).
    #[serde(default)]
    pub event_count: u64,
    /// First seen, ms since the epoch.
    #[serde(default)]
    pub created_at: Option<i64>,
    /// Last event or update, ms since the epoch.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

/// An event in a manifest; it keeps its seq on import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEvent {
    /// Its seq: at least 1, strictly increasing through the manifest.
    pub seq: u64,
    /// The event's type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Its session, if any.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Payload, JSON text; `null` when omitted.
    #[serde(default = "null_text", with = "super::raw_json")]
    pub data: String,
    /// When it was appended, ms since the epoch; the import's time when
    /// omitted.
    #[serde(default)]
    pub created_at: Option<i64>,
}

/// A memory entry in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestMemory {
    /// The key, an id.
    pub key: String,
    /// The value, JSON text.
    #[serde(with = "super::raw_json")]
    pub value: String,
    /// When it was written, ms since the epoch; the import's time when
    /// omitted.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

/// A db-snapshot in a manifest, bytes in standard padded base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestSnapshot {
    /// 64 lowercase hex digits of the bytes' SHA-256.
    pub sha256: String,
    /// The decoded size in bytes.
    pub size: u64,
    /// The last seq the snapshot reflects.
    pub event_watermark: u64,
    /// The bytes, base64.
    pub data_base64: String,
}

fn null_text() -> String {
    "null".to_owned()
}

fn running() -> String {
    "running".to_owned()
}

/// Reads everything the agent has into a manifest (snapshot left `None`):
/// every stored event in seq order, sessions oldest first, memory by key.
pub fn export(store: &impl SqlStore) -> Result<Manifest, DomainError> {
    let agent =
        record::role_and_metadata(store)?.map(|(role, metadata)| ManifestAgent { role, metadata });
    let sessions = sessions::list(store)?
        .into_iter()
        .map(|s| ManifestSession {
            session_id: s.session_id,
            status: s.status,
            metadata: s.metadata,
            first_seq: s.first_seq,
            last_seq: s.last_seq,
            event_count: s.event_count,
            created_at: Some(s.created_at),
            updated_at: Some(s.updated_at),
        })
        .collect();
    let memory = memory::all(store)?
        .into_iter()
        .map(|m| ManifestMemory {
            key: m.key,
            value: m.value,
            updated_at: Some(m.updated_at),
        })
        .collect();
    Ok(Manifest {
        format: Some(MANIFEST_FORMAT.to_owned()),
        agent,
        sessions,
        events: all_events(store)?,
        checkpoint: checkpoint::load(store)?.map(|c| c.document),
        memory,
        snapshot: None,
    })
}

fn all_events(store: &impl SqlStore) -> Result<Vec<ManifestEvent>, DomainError> {
    let rows = store.execute(
        "SELECT seq, type, session_id, data, created_at FROM events ORDER BY seq",
        Vec::new(),
    )?;
    rows.into_iter()
        .map(|mut row| {
            Ok(ManifestEvent {
                seq: row.uint(0)?,
                event_type: row.text(1)?.to_owned(),
                session_id: row.opt_text(2)?.map(str::to_owned),
                // Moved, not copied: up to 10,000 payloads of 1 MiB.
                data: take_text(&mut row, 3)?,
                created_at: Some(row.int(4)?),
            })
        })
        .collect()
}

fn take_text(row: &mut Row, index: usize) -> Result<String, DomainError> {
    match row
        .get_mut(index)
        .map(|v| std::mem::replace(v, SqlValue::Null))
    {
        Some(SqlValue::Text(text)) => Ok(text),
        other => Err(DomainError::Storage(format!(
            "column {index}: wanted text, got {other:?}"
        ))),
    }
}
