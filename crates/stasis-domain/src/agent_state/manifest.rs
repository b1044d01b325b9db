//! The manifest: everything an agent has, as one document.
//!
//! Documents (`data`, `metadata`, `checkpoint`, `value`) are JSON text here,
//! written into the serialised manifest as the JSON values they are and read
//! back as text ([`super::raw_json`]). Every field has a
//! default, so `{}` is a manifest (the empty agent); unknown fields are
//! refused at every level, so a misspelt field cannot silently reset state.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use serde::{Deserialize, Serialize};

/// The format this crate writes and reads.
pub const MANIFEST_FORMAT: &str = "stasis.agent.v1";

/// Everything an agent has.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`]; may be omitted on import.
    pub format: Option<String>,
    /// The agent's record; `None` when not registered.
    pub agent: Option<ManifestAgent>,
    /// Sessions, by id.
    pub sessions: Vec<ManifestSession>,
    /// Every stored event, in seq order.
    pub events: Vec<ManifestEvent>,
    /// The checkpoint document, JSON text.
    #[serde(with = "super::raw_json::option")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub checkpoint: Option<String>,
    /// Memory entries, sorted by key.
    pub memory: Vec<ManifestMemory>,
    /// The db-snapshot. The runtimes write and read it through the
    /// snapshot rules (KV above the inline limit), apart from the rest.
    pub snapshot: Option<ManifestSnapshot>,
    /// The workspace's head, JSON text (`PUT /workspace/manifest`'s body,
    /// with its `event_watermark`). The runtimes import it through the
    /// workspace rules, with [`Manifest::workspace_chunks`]; this crate's
    /// own whole-manifest import leaves both aside.
    #[serde(with = "super::raw_json::option")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub workspace: Option<String>,
    /// The workspace's pages and chunks (in any order; across the parts of
    /// an import they concatenate).
    pub workspace_chunks: Vec<ManifestChunk>,
}

/// A workspace chunk (or page) in a manifest.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestChunk {
    /// Its name: the sha256 of its bytes, 64 lowercase hex digits.
    pub sha256: String,
    /// Its bytes, base64 (standard, padded).
    pub data_base64: String,
}

/// The agent's record in a manifest.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestAgent {
    /// The agent's role.
    pub role: String,
    /// JSON text; `null` when omitted.
    #[serde(default = "null_text", with = "super::raw_json")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub metadata: String,
}

/// A session in a manifest. On import `first_seq`, `last_seq` and
/// `event_count` are recomputed from the manifest's events; a session with
/// no events keeps the given `first_seq` / `last_seq` (retention may have
/// dropped them) and counts 0. Missing times become the import's time.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
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
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub data: String,
    /// When it was appended, ms since the epoch; the import's time when
    /// omitted.
    #[serde(default)]
    pub created_at: Option<i64>,
}

/// A memory entry in a manifest.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestMemory {
    /// The key, an id.
    pub key: String,
    /// The value, JSON text.
    #[serde(with = "super::raw_json")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub value: String,
    /// When it was written, ms since the epoch; the import's time when
    /// omitted.
    #[serde(default)]
    pub updated_at: Option<i64>,
}

/// A db-snapshot in a manifest, bytes in standard padded base64.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
