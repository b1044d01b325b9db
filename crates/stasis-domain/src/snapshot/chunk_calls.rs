//! The object's side of kilo.db's chunked calls: the manifest commit,
//! reading the current snapshot as a manifest, where one chunk's bytes
//! are, and an import's manifest being written. The chunks themselves are
//! the chunk store's ([`crate::chunk_store::calls`]).

use super::{
    Committed, HASHED_MANIFESTS, KILO_DB, Reserved, SnapshotMeta, StorageKind, import_chunks,
    manifest::{MIN_CHUNK_SIZE, Manifest},
    rules,
};
use crate::{
    DomainError,
    chunk_store::{
        claims::Times,
        digest::{self, to_hex_all},
        manifests::reference_held,
        table::{self, parse_all, parse_sized},
    },
    sql::SqlStore,
};
use serde::{Deserialize, Serialize};

/// The current snapshot as a manifest, and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// Its metadata.
    pub meta: SnapshotMeta,
    /// Its chunk size (an inline or single-key snapshot is one chunk: the
    /// power of two at or above its size).
    pub chunk_size: u64,
    /// The chunks' hex sha256s, in order.
    pub chunks: Vec<String>,
    /// Where the bytes are.
    pub source: ChunkSource,
    /// Whether the server computed the metadata's sha256 over exactly
    /// these chunks' bytes: then chunks that each match their name are
    /// that file, and a whole-file read need not hash it again.
    #[serde(default)]
    pub sha256_from_chunks: bool,
}

/// Where bytes are: one chunk's, or a whole snapshot's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChunkSource {
    /// Under the agent's chunk keys.
    Chunks,
    /// In SQL: the inline snapshot's bytes (when asked for).
    Inline {
        /// The bytes.
        #[serde(with = "super::wire_bytes", default)]
        bytes: Option<Vec<u8>>,
    },
    /// Under one KV key (the layout before chunks).
    Key {
        /// The key.
        key: String,
    },
}

/// Reserves the version of an import's snapshot: its manifest grows as
/// [`import_record`] adds chunks, and names them so no collection takes
/// them while the import lasts.
pub(super) fn import_reserve(
    store: &impl SqlStore,
    chunk_size: u64,
    pending_ttl_ms: i64,
    now: i64,
) -> Result<Reserved, DomainError> {
    let expires_at = now.saturating_add(pending_ttl_ms);
    let version = import_chunks::reserve(store, chunk_size, expires_at)?;
    Ok(Reserved {
        version,
        kv_key: None,
    })
}

/// Records chunks KV now holds and appends them to the import's manifest;
/// whether each was new.
pub(super) fn import_record(
    store: &impl SqlStore,
    version: u64,
    chunks: &[(String, u64)],
    times: &Times,
) -> Result<Vec<bool>, DomainError> {
    import_chunks::record(store, version, &parse_sized(chunks)?, times)
}

/// Checks every chunk is held with the size its position needs, then adds
/// the manifest under a new version and switches the metadata to it.
pub(super) fn commit(
    store: &impl SqlStore,
    manifest: &Manifest,
    event_watermark: Option<u64>,
    now_ms: i64,
    readable_until: i64,
) -> Result<Committed, DomainError> {
    let hashes = parse_all(&manifest.chunks, "invalid_manifest")?;
    let expected_len = |index| Some(manifest.chunk_len(index));
    reference_held(store, &hashes, expected_len, "invalid_manifest")?;
    let version = KILO_DB.next_version(store)?;
    KILO_DB.insert_manifest(store, version, manifest.chunk_size, &hashes)?;
    let (meta, superseded_key) = rules::switch(
        store,
        &rules::Switch {
            version,
            sha256: &manifest.sha256,
            size: manifest.size,
            event_watermark,
            inline: None,
            kv_key: None,
            chunk_size: Some(manifest.chunk_size),
            now_ms,
            readable_until,
        },
    )?;
    Ok(Committed {
        meta,
        superseded_key,
    })
}

/// The current snapshot (or kept version `version`) as a manifest.
pub(super) fn plan(
    store: &impl SqlStore,
    with_inline: bool,
    version: Option<u64>,
) -> Result<Option<Plan>, DomainError> {
    let current = rules::current(store)?;
    let (meta, kv_key, kept_inline) = match (current, version) {
        (None, None) => return Ok(None),
        (Some((meta, kv_key)), None) => (meta, kv_key, None),
        (Some((meta, kv_key)), Some(wanted)) if meta.version == wanted => (meta, kv_key, None),
        (_, Some(wanted)) => {
            let (meta, inline) = super::kept::find(store, wanted)?;
            (meta, None, Some(inline))
        }
    };
    let whole_as_one = |meta: &SnapshotMeta| {
        let chunks = if meta.size == 0 {
            Vec::new()
        } else {
            vec![meta.sha256.clone()]
        };
        (meta.size.next_power_of_two().max(MIN_CHUNK_SIZE), chunks)
    };
    let (chunk_size, chunks, source) = match (meta.storage, kv_key) {
        (StorageKind::Inline, _) => {
            let bytes = match (with_inline, kept_inline) {
                (false, _) => None,
                (true, Some(kept)) => Some(kept.unwrap_or_default()),
                (true, None) => rules::inline_bytes(store)?,
            };
            let (size, chunks) = whole_as_one(&meta);
            (size, chunks, ChunkSource::Inline { bytes })
        }
        (StorageKind::Kv, Some(key)) => {
            let (size, chunks) = whole_as_one(&meta);
            (size, chunks, ChunkSource::Key { key })
        }
        (StorageKind::Kv, None) => {
            let Some((chunk_size, hashes)) = KILO_DB.manifest(store, meta.version)? else {
                return Err(DomainError::Storage(format!(
                    "snapshot version {} is chunked but has no manifest",
                    meta.version
                )));
            };
            (chunk_size, to_hex_all(&hashes), ChunkSource::Chunks)
        }
    };
    let sha256_from_chunks = source == ChunkSource::Chunks
        && KILO_DB.is_marked(store, HASHED_MANIFESTS, meta.version)?;
    Ok(Some(Plan {
        meta,
        chunk_size,
        chunks,
        source,
        sha256_from_chunks,
    }))
}

/// Where a chunk's bytes are: a stored chunk, or the whole of an inline
/// or single-key snapshot named by its sha256.
pub(super) fn source(
    store: &impl SqlStore,
    chunk: &str,
) -> Result<Option<ChunkSource>, DomainError> {
    let hashes = parse_all(std::slice::from_ref(&chunk.to_owned()), "invalid_id")?;
    if table::stored_size(store, &hashes[0])?.is_some() {
        return Ok(Some(ChunkSource::Chunks));
    }
    let wanted = digest::to_hex(&hashes[0]);
    match plan(store, true, None)? {
        Some(plan) if plan.meta.sha256 == wanted && plan.meta.size > 0 => match plan.source {
            ChunkSource::Chunks => Ok(None),
            other => Ok(Some(other)),
        },
        _ => Ok(None),
    }
}

/// Marks a version's manifest as one whose whole-file sha256 this server
/// computed over its chunks' bytes.
pub(super) fn mark_hashed(store: &impl SqlStore, version: u64) -> Result<(), DomainError> {
    KILO_DB.mark(store, HASHED_MANIFESTS, version)
}
