//! The calls the agent object answers about its chunks, whoever owns the
//! versions that name them, as data (the edge sends them to the agent's
//! Durable Object as JSON): which chunks are missing, an upload's claims
//! and record, and the steps of a collection.

use super::{
    PENDING_CHUNK_TTL_MS,
    claims::{self, Claim, Taken, Times},
    digest::{ChunkHash, to_hex_all},
    table::{self, parse_all, parse_sized},
};
use crate::{DomainError, object_env::ObjectEnv, sql::SqlStore};
use serde::{Deserialize, Serialize};

/// One chunk operation on the agent object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ChunkCall {
    /// Which of these chunks the store lacks; the held ones are kept from
    /// collection for the pending hour.
    Missing {
        /// Hex sha256s.
        chunks: Vec<String>,
        /// How long the held ones are kept from collection (ms).
        #[serde(default = "default_pending_ttl")]
        pending_ttl_ms: i64,
    },
    /// Claims chunks for an upload, before their keys are written.
    ClaimUploads {
        /// Hex sha256s.
        chunks: Vec<String>,
        /// How long they are kept while no manifest names them (ms).
        #[serde(default = "default_pending_ttl")]
        pending_ttl_ms: i64,
        /// Collection claims made before this (ms) were abandoned.
        #[serde(default)]
        stale_before: i64,
    },
    /// Records chunks an upload claimed and KV now holds.
    RecordChunks {
        /// Hex sha256 and size of each.
        chunks: Vec<(String, u64)>,
        /// How long they are kept while no manifest names them (ms).
        #[serde(default = "default_pending_ttl")]
        pending_ttl_ms: i64,
    },
    /// Takes up to `limit` unreferenced chunks for one collection.
    CollectTake {
        /// The most to take.
        limit: u64,
        /// Collection claims made before this (ms) were abandoned.
        #[serde(default)]
        stale_before: i64,
    },
    /// The KV keys of a collection's chunks are deleted.
    CollectDone {
        /// Hex sha256s.
        chunks: Vec<String>,
        /// The collection's mark, from [`ChunkCall::CollectTake`].
        claim_at: i64,
    },
    /// Takes for deletion the chunks found in KV that have no row.
    ClaimOrphans {
        /// Hex sha256s.
        chunks: Vec<String>,
    },
    /// The recorded size of each of these chunks the store holds (a batch
    /// read's check, before any key is read); changes nothing.
    StoredSizes {
        /// Hex sha256s.
        chunks: Vec<String>,
    },
}

/// The answer to a [`ChunkCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum ChunkReply {
    /// Chunks (hex sha256s) missing.
    Chunks(Vec<String>),
    /// What an upload may do with each chunk it claimed.
    Claims(Vec<Claim>),
    /// Chunks a collection took.
    Taken(Taken<String>),
    /// Whether each recorded chunk was new.
    Recorded(Vec<bool>),
    /// Each asked-for chunk's size, `None` where the store lacks it.
    Sizes(Vec<Option<u64>>),
    /// Nothing to say.
    Done,
}

/// The pending time a call that names none gets.
pub(super) fn default_pending_ttl() -> i64 {
    PENDING_CHUNK_TTL_MS
}

/// Runs one call on the agent's store, inside the caller's transaction.
/// Every chunk call but [`ChunkCall::StoredSizes`] may change the object.
pub fn execute(
    store: &impl SqlStore,
    call: &ChunkCall,
    env: &ObjectEnv,
) -> Result<ChunkReply, DomainError> {
    let now = env.now_ms;
    Ok(match call {
        ChunkCall::Missing {
            chunks,
            pending_ttl_ms,
        } => {
            let hashes = parse_all(chunks, "invalid_request")?;
            let until = now.saturating_add(*pending_ttl_ms);
            ChunkReply::Chunks(to_hex_all(&table::missing(store, &hashes, until)?))
        }
        ChunkCall::ClaimUploads {
            chunks,
            pending_ttl_ms,
            stale_before,
        } => {
            let times = Times::at(now, *pending_ttl_ms, *stale_before);
            let hashes = parse_all(chunks, "invalid_id")?;
            ChunkReply::Claims(claims::claim_uploads(store, &hashes, &times)?)
        }
        ChunkCall::RecordChunks {
            chunks,
            pending_ttl_ms,
        } => {
            let times = Times::at(now, *pending_ttl_ms, 0);
            ChunkReply::Recorded(claims::record(store, &parse_sized(chunks)?, &times)?)
        }
        ChunkCall::CollectTake {
            limit,
            stale_before,
        } => {
            let times = Times::at(now, 0, *stale_before);
            let limit = usize::try_from(*limit).unwrap_or(usize::MAX);
            ChunkReply::Taken(hex_taken(claims::collect_take(store, &times, limit)?))
        }
        ChunkCall::CollectDone { chunks, claim_at } => {
            claims::collect_done(store, &parse_all(chunks, "invalid_id")?, *claim_at)?;
            ChunkReply::Done
        }
        ChunkCall::ClaimOrphans { chunks } => {
            let hashes = parse_all(chunks, "invalid_id")?;
            ChunkReply::Taken(hex_taken(claims::claim_orphans(store, &hashes, now)?))
        }
        ChunkCall::StoredSizes { chunks } => {
            let hashes = parse_all(chunks, "invalid_request")?;
            let sizes = table::stored_sizes(store, &table::distinct(&hashes))?;
            ChunkReply::Sizes(hashes.iter().map(|h| sizes.get(h).copied()).collect())
        }
    })
}

fn hex_taken(taken: Taken<ChunkHash>) -> Taken<String> {
    Taken {
        chunks: to_hex_all(&taken.chunks),
        claim_at: taken.claim_at,
    }
}
