//! The agent's kilo.db snapshot.
//!
//! Small snapshots (up to the inline limit) live in the agent object's SQL;
//! larger ones as chunks in the agent's chunk store ([`crate::chunk_store`]:
//! immutable KV keys named by their sha256, reference-counted, claimed and
//! collected there), and the version's manifest `{size, sha256, chunk_size,
//! chunks}` here, as the chunk store's [`KILO_DB`] owner. A write stores its
//! chunks first, then switches the metadata row to the new manifest in one
//! step (re-checking `If-Match` there, since other calls may run while KV
//! is written); chunks no version names any more are collected after. A
//! reader therefore sees the old snapshot or the new one, never a mix, and
//! every byte handed out is checked against its sha256.
//!
//! What is kilo.db's own lives here: the inline snapshot, the single-key
//! layout from before chunks, the whole-file PUT and GET ([`whole`]), the
//! fixed-size manifest ([`manifest`]), the event watermark, an import's
//! staged snapshot ([`staged`], [`import_chunks`]).
//!
//! - [`execute`] runs the object's side ([`SnapshotCall`], which carries
//!   the chunk store's calls too) over its SQL.
//! - [`saga`] drives a whole put/get/delete/sweep over two async ports:
//!   the agent's object ([`ports::SnapshotObject`]) and the KV store
//!   ([`crate::chunk_store::ports::BlobStore`]). Each runtime runs it in its
//!   own process (so the bytes stream and are hashed natively): the host
//!   over its agent objects and KV folder, the edge worker over Durable
//!   Object calls and Workers KV.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

mod call;
pub mod chunk_calls;
pub mod chunk_saga;
pub mod import_chunks;
pub mod kept;
mod keys;
pub mod manifest;
pub mod operations;
pub mod ports;
pub mod ranges;
pub mod restore;
mod rules;
pub mod saga;
mod schema;
pub mod staged;
pub mod whole;
mod whole_reader;
mod wire_bytes;

pub use call::{Located, SnapshotCall, SnapshotReply, execute, is_write};
pub use keys::wipe;
pub use rules::{current_meta, too_large};
pub use schema::migrate;

use crate::chunk_store::{Owner, PENDING_CHUNK_TTL_MS};
use serde::{Deserialize, Serialize};

/// The largest snapshot accepted unless the runtime is configured
/// otherwise (1 GiB).
pub const DEFAULT_SNAPSHOT_LIMIT: u64 = 1 << 30;
/// Snapshots up to this size are stored inline unless configured otherwise.
pub const DEFAULT_INLINE_LIMIT: u64 = 1_048_576;
/// The inline limit may not pass this: a Durable Object SQL row holds at
/// most 2,000,000 bytes, and the row carries a few other columns.
pub const MAX_INLINE_LIMIT: u64 = 1_999_000;
/// A reservation older than this belongs to a put that died between its KV
/// write and its metadata switch; a sweep may delete its key.
pub const PENDING_TTL_MS: i64 = 15 * 60 * 1000;

/// kilo.db snapshots as an owner of chunk store versions: their manifests,
/// their version counter, and the marks of manifests whose whole-file
/// sha256 this server computed over exactly their chunks' bytes (a
/// whole-file PUT; a table of its own, so that a database from before it
/// reads every manifest as not so marked).
pub const KILO_DB: Owner = Owner {
    manifests: "snapshot_manifests",
    counter: "snapshot_counter",
    marks: &[HASHED_MANIFESTS],
};

/// [`KILO_DB`]'s marks of manifests hashed by this server.
const HASHED_MANIFESTS: &str = "snapshot_hashed_manifests";

/// Where a snapshot's bytes live.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageKind {
    /// In the agent object's SQL.
    Inline,
    /// In KV, under the version's own key.
    Kv,
}

impl StorageKind {
    /// The name stored and shown: `inline` or `kv`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Kv => "kv",
        }
    }
}

/// What is known of the current snapshot.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotMeta {
    /// Counts up from 1 per agent, never reused.
    pub version: u64,
    /// Lowercase hex sha256 of the bytes.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// Inline or KV.
    pub storage: StorageKind,
    /// The agent's last event seq the snapshot reflects.
    pub event_watermark: u64,
    /// When it was stored, ms since the epoch.
    pub created_at: i64,
}

impl SnapshotMeta {
    /// The HTTP entity tag: the sha256, quoted.
    pub fn etag(&self) -> String {
        format!("\"{}\"", self.sha256)
    }
}

/// A reserved version: a put's, or an import's chunked snapshot's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reserved {
    /// The version.
    pub version: u64,
    /// Where to write the bytes first; `None` for an inline snapshot.
    pub kv_key: Option<String>,
}

/// A finished switch: a whole-file commit's or a manifest's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committed {
    /// The new current snapshot.
    pub meta: SnapshotMeta,
    /// The KV key it replaced, to delete now.
    pub superseded_key: Option<String>,
}

/// An `If-Match` condition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "etags", rename_all = "snake_case")]
pub enum Precondition {
    /// `If-Match: *`: some snapshot must exist.
    Exists,
    /// The current sha256 must be one of these.
    OneOf(Vec<String>),
}

impl Precondition {
    /// Whether `current` satisfies the condition.
    pub fn holds(&self, current: Option<&SnapshotMeta>) -> bool {
        match (self, current) {
            (_, None) => false,
            (Self::Exists, Some(_)) => true,
            (Self::OneOf(etags), Some(meta)) => etags.contains(&meta.sha256),
        }
    }
}

/// A snapshot to store, as the runtime received it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PutRequest {
    /// `X-Stasis-Sha256`: the body must hash to this.
    pub expected_sha256: Option<String>,
    /// `If-Match`.
    pub precondition: Option<Precondition>,
    /// `X-Stasis-Event-Seq`; defaults to the agent's last seq.
    pub event_watermark: Option<u64>,
    /// Bodies up to this size are stored inline.
    pub inline_limit: u64,
    /// KV keys of this agent start with this (`<town>/<rig>/<agent>/`).
    pub key_prefix: String,
    /// The snapshot limit.
    #[serde(default = "default_limit")]
    pub limit: u64,
    /// How long chunks written but not yet committed are kept (ms).
    #[serde(default = "default_pending_ttl")]
    pub pending_ttl_ms: i64,
    /// Collection claims made before this (ms) were abandoned (see
    /// [`crate::chunk_store::claims`]).
    #[serde(default)]
    pub stale_before: i64,
    /// How long the superseded version's chunks stay readable (ms).
    #[serde(default)]
    pub grace_ms: i64,
}

fn default_limit() -> u64 {
    DEFAULT_SNAPSHOT_LIMIT
}

fn default_pending_ttl() -> i64 {
    PENDING_CHUNK_TTL_MS
}

/// A snapshot whose bytes are stored (in KV, or carried inline) under a
/// reserved version that no metadata names yet: an import's, waiting for
/// the import's commit to switch to it ([`staged`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedSnapshot {
    /// The reserved version.
    pub version: u64,
    /// Lowercase hex sha256 of the bytes, as hashed when they were stored.
    pub sha256: String,
    /// Bytes.
    pub size: u64,
    /// The last seq the snapshot reflects.
    pub event_watermark: u64,
    /// Its KV key, for a snapshot above the inline limit.
    pub kv_key: Option<String>,
    /// Its bytes, for an inline snapshot.
    #[serde(with = "wire_bytes", default)]
    pub inline: Option<Vec<u8>>,
    /// Its chunk size, for a chunked snapshot: its manifest is stored under
    /// `version` ([`import_chunks`]).
    #[serde(default)]
    pub chunk_size: Option<u64>,
}
