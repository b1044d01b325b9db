//! The calls the agent object answers about its chunks, whoever owns the
//! versions that name them, as data (the edge sends them to the agent's
//! Durable Object as JSON): which chunks are missing, an upload's claims
//! and record, and the steps of a collection.

use super::{
    PENDING_CHUNK_TTL_MS,
    claims::{self, Claim, Taken, Times},
    digest::{ChunkHash, to_hex_all},
    holds,
    origins::{self, Adopted},
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
    /// Each chunk's size and origin (`rig/agent`; `None`: this agent's own
    /// folder), `None` where the store lacks it; changes nothing. A fork
    /// asks its source.
    Located {
        /// Hex sha256s.
        chunks: Vec<String>,
    },
    /// Records a fork's chunks whose keys another agent's folder holds
    /// (see `origins`), kept for the pending time.
    Adopt {
        /// Hex sha256, size and origin (`rig/agent`) of each.
        chunks: Vec<(String, u64, String)>,
        /// How long they are kept while no manifest names them (ms).
        #[serde(default = "default_pending_ttl")]
        pending_ttl_ms: i64,
    },
    /// Fork `holder` (`rig/agent`) holds these chunks here (replacing its
    /// hold, if any); 409 `chunks_missing` for one the store lacks.
    Hold {
        /// The fork.
        holder: String,
        /// Hex sha256s.
        chunks: Vec<String>,
    },
    /// Fork `holder` releases its hold; the chunks nothing else names are
    /// collected after `grace_ms`.
    ReleaseHold {
        /// The fork.
        holder: String,
        /// How long they stay readable (ms).
        #[serde(default)]
        grace_ms: i64,
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
    /// Each asked-for chunk's size and origin, `None` where the store
    /// lacks it.
    Located(Vec<Option<(u64, Option<String>)>>),
    /// Whether there was such a thing.
    Existed(bool),
    /// Nothing to say.
    Done,
}

/// The pending time a call that names none gets.
pub(super) fn default_pending_ttl() -> i64 {
    PENDING_CHUNK_TTL_MS
}

/// Runs one call on the agent's store, inside the caller's transaction.
/// Every chunk call but [`ChunkCall::StoredSizes`] and
/// [`ChunkCall::Located`] may change the object.
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
        ChunkCall::Located { chunks } => {
            let hashes = parse_all(chunks, "invalid_request")?;
            let sizes = table::stored_sizes(store, &table::distinct(&hashes))?;
            let origins = origins::origins(store, &table::distinct(&hashes))?;
            let located = hashes
                .iter()
                .map(|h| sizes.get(h).map(|size| (*size, origins.get(h).cloned())))
                .collect();
            ChunkReply::Located(located)
        }
        ChunkCall::Adopt {
            chunks,
            pending_ttl_ms,
        } => {
            let mut adopted = Vec::with_capacity(chunks.len());
            for (hex, size, origin) in chunks {
                origins::parse_origin(origin)?;
                let hash = parse_all(std::slice::from_ref(hex), "invalid_request")?;
                adopted.extend(hash.into_iter().map(|hash| Adopted {
                    hash,
                    size: *size,
                    origin: origin.clone(),
                }));
            }
            let until = now.saturating_add(*pending_ttl_ms);
            origins::adopt(store, &adopted, now, until)?;
            ChunkReply::Done
        }
        ChunkCall::Hold { holder, chunks } => {
            origins::parse_origin(holder)?;
            holds::hold(store, holder, &parse_all(chunks, "invalid_request")?)?;
            ChunkReply::Done
        }
        ChunkCall::ReleaseHold { holder, grace_ms } => {
            let until = super::manifests::readable_until(now, *grace_ms);
            ChunkReply::Existed(holds::release(store, holder, until)?)
        }
    })
}

fn hex_taken(taken: Taken<ChunkHash>) -> Taken<String> {
    Taken {
        chunks: to_hex_all(&taken.chunks),
        claim_at: taken.claim_at,
    }
}
