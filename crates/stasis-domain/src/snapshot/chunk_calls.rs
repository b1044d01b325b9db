//! The object's side of the chunked calls: missing chunks, recording
//! uploads, the manifest commit, reading the current snapshot as a
//! manifest, and the steps of a collection.

use super::{
    Committed, Reserved, SnapshotMeta, StorageKind,
    chunk_claims::{self, Claim, Taken, Times},
    chunk_table::{self, parse_all},
    digest::{self, ChunkHash},
    import_chunks,
    manifest::{MIN_CHUNK_SIZE, Manifest},
    rules,
};
use crate::{DomainError, sql::SqlStore};
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

/// Which of `chunks` the store lacks; the held ones are kept from
/// collection until `now + pending_ttl_ms`.
pub(super) fn missing(
    store: &impl SqlStore,
    chunks: &[String],
    pending_ttl_ms: i64,
    now: i64,
) -> Result<Vec<String>, DomainError> {
    let hashes = parse_all(chunks, "invalid_request")?;
    let until = now.saturating_add(pending_ttl_ms);
    Ok(hex_all(&chunk_table::missing(store, &hashes, until)?))
}

/// Claims chunks for an upload: what it may do with each.
pub(super) fn claim_uploads(
    store: &impl SqlStore,
    chunks: &[String],
    times: &Times,
) -> Result<Vec<Claim>, DomainError> {
    chunk_claims::claim_uploads(store, &parse_all(chunks, "invalid_id")?, times)
}

/// Records chunks an upload claimed and KV now holds; whether each was new.
pub(super) fn record(
    store: &impl SqlStore,
    chunks: &[(String, u64)],
    times: &Times,
) -> Result<Vec<bool>, DomainError> {
    chunk_claims::record(store, &sized(chunks)?, times)
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
    import_chunks::record(store, version, &sized(chunks)?, times)
}

/// Hex names with their sizes, parsed.
fn sized(chunks: &[(String, u64)]) -> Result<Vec<(ChunkHash, u64)>, DomainError> {
    let mut parsed = Vec::with_capacity(chunks.len());
    for (hex, size) in chunks {
        let hash = parse_all(std::slice::from_ref(hex), "invalid_id")?;
        parsed.extend(hash.into_iter().map(|h| (h, *size)));
    }
    Ok(parsed)
}

/// Takes up to `limit` chunks for deletion, for one collection.
pub(super) fn collect_take(
    store: &impl SqlStore,
    limit: u64,
    times: &Times,
) -> Result<Taken<String>, DomainError> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    Ok(hex_taken(chunk_claims::collect_take(store, times, limit)?))
}

/// The KV keys of a collection's chunks are deleted.
pub(super) fn collect_done(
    store: &impl SqlStore,
    chunks: &[String],
    claim_at: i64,
) -> Result<(), DomainError> {
    chunk_claims::collect_done(store, &parse_all(chunks, "invalid_id")?, claim_at)
}

/// Takes for deletion the chunks found in KV that no row claims.
pub(super) fn claim_orphans(
    store: &impl SqlStore,
    chunks: &[String],
    now: i64,
) -> Result<Taken<String>, DomainError> {
    let hashes = parse_all(chunks, "invalid_id")?;
    Ok(hex_taken(chunk_claims::claim_orphans(store, &hashes, now)?))
}

fn hex_taken(taken: Taken<ChunkHash>) -> Taken<String> {
    Taken {
        chunks: hex_all(&taken.chunks),
        claim_at: taken.claim_at,
    }
}

fn hex_all(hashes: &[ChunkHash]) -> Vec<String> {
    hashes.iter().map(digest::to_hex).collect()
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
    let sizes = chunk_table::stored_sizes(store, &chunk_table::distinct(&hashes))?;
    let missing: Vec<String> = chunk_table::distinct(&hashes)
        .iter()
        .filter(|h| !sizes.contains_key(*h))
        .map(digest::to_hex)
        .collect();
    if !missing.is_empty() {
        return Err(DomainError::ChunksMissing { missing });
    }
    for (index, hash) in hashes.iter().enumerate() {
        let recorded = sizes.get(hash).copied().unwrap_or_default();
        let expected = manifest.chunk_len(index);
        if recorded != expected {
            return Err(DomainError::invalid(
                "invalid_manifest",
                format!(
                    "chunk {index} ({}) holds {recorded} bytes; its position needs {expected}",
                    manifest.chunks[index]
                ),
            ));
        }
    }
    let version = rules::next_version(store)?;
    chunk_table::add_manifest(store, version, manifest.chunk_size, &hashes)?;
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

/// The current snapshot as a manifest.
pub(super) fn plan(store: &impl SqlStore, with_inline: bool) -> Result<Option<Plan>, DomainError> {
    let Some((meta, kv_key)) = rules::current(store)? else {
        return Ok(None);
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
            let bytes = if with_inline {
                rules::inline_bytes(store)?
            } else {
                None
            };
            let (size, chunks) = whole_as_one(&meta);
            (size, chunks, ChunkSource::Inline { bytes })
        }
        (StorageKind::Kv, Some(key)) => {
            let (size, chunks) = whole_as_one(&meta);
            (size, chunks, ChunkSource::Key { key })
        }
        (StorageKind::Kv, None) => {
            let Some((chunk_size, hashes)) = chunk_table::manifest(store, meta.version)? else {
                return Err(DomainError::Storage(format!(
                    "snapshot version {} is chunked but has no manifest",
                    meta.version
                )));
            };
            (chunk_size, hex_all(&hashes), ChunkSource::Chunks)
        }
    };
    let sha256_from_chunks =
        source == ChunkSource::Chunks && chunk_table::is_hashed(store, meta.version)?;
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
    if chunk_table::stored_size(store, &hashes[0])?.is_some() {
        return Ok(Some(ChunkSource::Chunks));
    }
    let wanted = digest::to_hex(&hashes[0]);
    match plan(store, true)? {
        Some(plan) if plan.meta.sha256 == wanted && plan.meta.size > 0 => match plan.source {
            ChunkSource::Chunks => Ok(None),
            other => Ok(Some(other)),
        },
        _ => Ok(None),
    }
}
