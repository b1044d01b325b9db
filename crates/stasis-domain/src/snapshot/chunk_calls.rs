//! The object's side of the chunked calls: missing chunks, recording
//! uploads, the manifest commit, reading the current snapshot as a
//! manifest, and the steps of a collection.

use super::{
    SnapshotCall, SnapshotMeta, SnapshotReply, StorageKind,
    call::{Committed, Reserved},
    chunk_table::{self, parse_all},
    digest::{self, ChunkHash},
    import_chunks,
    manifest::{MIN_CHUNK_SIZE, Manifest},
    rules,
};
use crate::{DomainError, agent::ObjectEnv, sql::SqlStore};
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

/// Runs a chunked call.
pub fn execute(
    store: &impl SqlStore,
    call: &SnapshotCall,
    env: &ObjectEnv,
) -> Result<SnapshotReply, DomainError> {
    let now = env.now_ms;
    Ok(match call {
        SnapshotCall::CheckPrecondition { precondition } => {
            rules::check_precondition(store, precondition.as_ref())?;
            SnapshotReply::Done
        }
        SnapshotCall::Missing {
            chunks,
            pending_ttl_ms,
        } => {
            let hashes = parse_all(chunks, "invalid_request")?;
            let until = now.saturating_add(*pending_ttl_ms);
            SnapshotReply::Chunks(hex_all(&chunk_table::missing(store, &hashes, until)?))
        }
        SnapshotCall::RecordChunks {
            chunks,
            started_at,
            pending_ttl_ms,
            clock_slack_ms,
        } => {
            let times = times(now, *started_at, *pending_ttl_ms, *clock_slack_ms);
            SnapshotReply::Recorded(chunk_table::record(store, &sized(chunks)?, &times)?)
        }
        SnapshotCall::ImportReserve {
            chunk_size,
            pending_ttl_ms,
        } => {
            let expires_at = now.saturating_add(*pending_ttl_ms);
            let version = import_chunks::reserve(store, *chunk_size, expires_at)?;
            SnapshotReply::Reserved(Reserved {
                version,
                kv_key: None,
            })
        }
        SnapshotCall::ImportRecord {
            version,
            chunks,
            started_at,
            pending_ttl_ms,
            clock_slack_ms,
        } => {
            let times = times(now, *started_at, *pending_ttl_ms, *clock_slack_ms);
            let parsed = sized(chunks)?;
            let fresh =
                import_chunks::record(store, *version, &parsed, &times, times.pending_until)?;
            SnapshotReply::Recorded(fresh)
        }
        SnapshotCall::CommitManifest {
            manifest,
            precondition,
            event_watermark,
            limit,
        } => {
            rules::check_size(manifest.size, *limit)?;
            rules::check_precondition(store, precondition.as_ref())?;
            SnapshotReply::Committed(commit(store, manifest, *event_watermark, now)?)
        }
        SnapshotCall::Plan { with_inline } => SnapshotReply::Planned(plan(store, *with_inline)?),
        SnapshotCall::ChunkSource { chunk } => SnapshotReply::ChunkAt(source(store, chunk)?),
        SnapshotCall::CollectTake { limit } => {
            let limit = usize::try_from(*limit).unwrap_or(usize::MAX);
            SnapshotReply::Chunks(hex_all(&chunk_table::collect_take(store, now, limit)?))
        }
        SnapshotCall::CollectDone { chunks } => {
            chunk_table::collect_done(store, &parse_all(chunks, "invalid_id")?, now)?;
            SnapshotReply::Done
        }
        SnapshotCall::ClaimOrphans { chunks } => {
            let hashes = parse_all(chunks, "invalid_id")?;
            SnapshotReply::Chunks(hex_all(&chunk_table::claim_orphans(store, &hashes, now)?))
        }
        other => {
            return Err(DomainError::Storage(format!(
                "{other:?} is not a chunked snapshot call"
            )));
        }
    })
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

/// The times of an upload recorded at `now`.
fn times(
    now: i64,
    started_at: i64,
    pending_ttl_ms: i64,
    clock_slack_ms: i64,
) -> chunk_table::Times {
    chunk_table::Times {
        started_at,
        now_ms: now,
        pending_until: now.saturating_add(pending_ttl_ms),
        clock_slack_ms: clock_slack_ms.max(0),
    }
}

fn hex_all(hashes: &[ChunkHash]) -> Vec<String> {
    hashes.iter().map(digest::to_hex).collect()
}

/// Checks every chunk is held with the size its position needs, then adds
/// the manifest under a new version and switches the metadata to it.
fn commit(
    store: &impl SqlStore,
    manifest: &Manifest,
    event_watermark: Option<u64>,
    now_ms: i64,
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
        },
    )?;
    Ok(Committed {
        meta,
        superseded_key,
    })
}

/// The current snapshot as a manifest.
fn plan(store: &impl SqlStore, with_inline: bool) -> Result<Option<Plan>, DomainError> {
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
    Ok(Some(Plan {
        meta,
        chunk_size,
        chunks,
        source,
    }))
}

/// Where a chunk's bytes are: a stored chunk, or the whole of an inline
/// or single-key snapshot named by its sha256.
fn source(store: &impl SqlStore, chunk: &str) -> Result<Option<ChunkSource>, DomainError> {
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
