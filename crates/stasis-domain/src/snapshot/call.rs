//! The calls the agent object answers for snapshots, as data (the edge
//! sends them to the agent's Durable Object as JSON). The chunk store's
//! calls travel among them, in the same JSON as kilo.db's own
//! ([`SnapshotCall::Chunk`]).

use super::{
    Committed, KILO_DB, Precondition, Reserved, SnapshotMeta, chunk_calls, keys,
    manifest::Manifest, rules, wire_bytes,
};
use crate::{
    DomainError,
    chunk_store::{self, ChunkCall, ChunkReply, claims::Times, manifests::readable_until},
    object_env::ObjectEnv,
    sql::SqlStore,
};
use serde::{Deserialize, Serialize};

/// One snapshot operation on the agent object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum SnapshotCall {
    /// Checks `If-Match` early and hands out the next version.
    Reserve {
        /// Bytes.
        size: u64,
        /// `If-Match`.
        precondition: Option<Precondition>,
        /// Bodies up to this size are stored inline.
        inline_limit: u64,
        /// Where this agent's KV keys start.
        key_prefix: String,
        /// The snapshot limit.
        #[serde(default = "super::default_limit")]
        limit: u64,
    },
    /// Switches the metadata to the reserved version, re-checking `If-Match`.
    Commit {
        /// From [`SnapshotCall::Reserve`].
        version: u64,
        /// Hex sha256.
        sha256: String,
        /// Bytes.
        size: u64,
        /// `If-Match`, checked again at the switch.
        precondition: Option<Precondition>,
        /// `X-Stasis-Event-Seq`.
        event_watermark: Option<u64>,
        /// The bytes of an inline snapshot.
        #[serde(with = "wire_bytes", default)]
        inline: Option<Vec<u8>>,
        /// The key of a KV snapshot.
        kv_key: Option<String>,
        /// How long the superseded version's chunks stay readable (ms).
        #[serde(default)]
        grace_ms: i64,
    },
    /// Gives a reservation up (and an import's manifest still being
    /// written under it).
    Abandon {
        /// From [`SnapshotCall::Reserve`].
        version: u64,
    },
    /// The current snapshot; its inline bytes when `with_bytes`.
    Locate {
        /// Read the inline bytes too.
        with_bytes: bool,
    },
    /// Drops the current snapshot.
    Remove {
        /// How long its chunks stay readable (ms).
        #[serde(default)]
        grace_ms: i64,
    },
    /// The KV keys a sweep must keep.
    KeysInUse,
    /// Removes every snapshot row (the agent is destroyed or replaced).
    Wipe,
    /// Refuses unless `If-Match` holds now (a whole-file PUT checks early).
    CheckPrecondition {
        /// `If-Match`.
        precondition: Option<Precondition>,
    },
    /// Switches the metadata to a manifest whose chunks the store holds.
    CommitManifest {
        /// The manifest, already checked.
        manifest: Manifest,
        /// `If-Match`.
        precondition: Option<Precondition>,
        /// The watermark given, if any.
        event_watermark: Option<u64>,
        /// The snapshot limit.
        limit: u64,
        /// Whether this server computed `manifest.sha256` over exactly the
        /// chunks' bytes (a whole-file PUT), so that a whole-file read,
        /// which checks each chunk, need not hash the whole file again. A
        /// client's manifest never is: its sha256 is only claimed.
        #[serde(default)]
        sha256_from_chunks: bool,
        /// How long the superseded version's chunks stay readable (ms).
        #[serde(default)]
        grace_ms: i64,
    },
    /// The current snapshot (or kept version `version`) as a manifest,
    /// with an inline snapshot's bytes when `with_inline`.
    Plan {
        /// Read an inline snapshot's bytes too.
        with_inline: bool,
        /// A kept version instead of the current one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
    },
    /// Where one chunk's bytes are.
    ChunkSource {
        /// Hex sha256.
        chunk: String,
    },
    /// Reserves a version for an import's chunked snapshot: an empty
    /// manifest, marked as being written (`import_chunks`).
    ImportReserve {
        /// The chunk size of its manifest.
        chunk_size: u64,
        /// How long the mark lasts without another record (ms).
        pending_ttl_ms: i64,
    },
    /// Records chunks an upload claimed and KV now holds, and appends
    /// them to the import's manifest, which names each (so no collection
    /// takes them).
    ImportRecord {
        /// From [`SnapshotCall::ImportReserve`].
        version: u64,
        /// Hex sha256 and size of each, in file order.
        chunks: Vec<(String, u64)>,
        /// How long the mark lasts without another record (ms).
        pending_ttl_ms: i64,
    },
    /// A step of the chunk store, whose JSON is the chunk call's own (so
    /// that it reads the same as before the chunk store had calls of its
    /// own).
    #[serde(untagged)]
    Chunk(ChunkCall),
}

/// The answer to a [`SnapshotCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum SnapshotReply {
    /// A version to write.
    Reserved(Reserved),
    /// The new metadata.
    Committed(Committed),
    /// Nothing to say.
    Done,
    /// The current snapshot, if any.
    Located(Option<Located>),
    /// The removed snapshot's KV key, if it had one.
    Removed(Option<String>),
    /// Keys in use.
    Keys(Vec<String>),
    /// Whether each recorded chunk was new.
    Recorded(Vec<bool>),
    /// The current snapshot as a manifest, if any.
    Planned(Option<super::chunk_calls::Plan>),
    /// Where a chunk is, if the store holds it.
    ChunkAt(Option<super::chunk_calls::ChunkSource>),
    /// The answer to a chunk store step, in its own JSON; one that reads
    /// as [`SnapshotReply::Done`] or [`SnapshotReply::Recorded`] arrives
    /// as those ([`chunk_reply`]).
    #[serde(untagged)]
    Chunk(ChunkReply),
}

/// The chunk store's reply inside a snapshot reply, if that is what it is.
pub fn chunk_reply(reply: SnapshotReply) -> Option<ChunkReply> {
    match reply {
        SnapshotReply::Chunk(reply) => Some(reply),
        SnapshotReply::Done => Some(ChunkReply::Done),
        SnapshotReply::Recorded(fresh) => Some(ChunkReply::Recorded(fresh)),
        _ => None,
    }
}

/// The current snapshot and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Located {
    /// Its metadata.
    pub meta: SnapshotMeta,
    /// Inline bytes, when asked for.
    #[serde(with = "wire_bytes", default)]
    pub inline: Option<Vec<u8>>,
    /// Its KV key.
    pub kv_key: Option<String>,
}

/// Runs one call on the agent's store, inside the caller's transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &SnapshotCall,
    env: &ObjectEnv,
) -> Result<SnapshotReply, DomainError> {
    let now = env.now_ms;
    Ok(match call {
        SnapshotCall::Reserve {
            size,
            precondition,
            inline_limit,
            key_prefix,
            limit,
        } => {
            rules::check_precondition(store, precondition.as_ref())?;
            let (version, kv_key) = rules::reserve(
                store,
                (*size, *limit),
                *inline_limit,
                key_prefix,
                env.now_ms,
            )?;
            SnapshotReply::Reserved(Reserved { version, kv_key })
        }
        SnapshotCall::Commit {
            version,
            sha256,
            size,
            precondition,
            event_watermark,
            inline,
            kv_key,
            grace_ms,
        } => {
            rules::check_precondition(store, precondition.as_ref())?;
            // An inline snapshot names no key, so it takes its version now:
            // versions then count up in the order snapshots became current,
            // as a manifest commit's do.
            let version = match kv_key {
                None => KILO_DB.next_version(store)?,
                Some(_) => *version,
            };
            let readable_until = readable_until(now, *grace_ms);
            super::kept::keep_current(store, now)?;
            let (meta, superseded_key) = rules::switch(
                store,
                &rules::Switch {
                    version,
                    sha256,
                    size: *size,
                    event_watermark: *event_watermark,
                    inline: inline.as_deref(),
                    kv_key: kv_key.as_deref(),
                    chunk_size: None,
                    now_ms: env.now_ms,
                    readable_until,
                },
            )?;
            super::kept::made_current(store, &meta, (now, &env.retention), readable_until)?;
            SnapshotReply::Committed(Committed {
                meta,
                superseded_key,
            })
        }
        SnapshotCall::Abandon { version } => {
            rules::release(store, *version)?;
            super::import_chunks::abandon(store, *version)?;
            SnapshotReply::Done
        }
        SnapshotCall::Locate { with_bytes } => {
            let located = match rules::current(store)? {
                None => None,
                Some((meta, kv_key)) => {
                    let inline = if *with_bytes && kv_key.is_none() {
                        rules::inline_bytes(store)?
                    } else {
                        None
                    };
                    Some(Located {
                        meta,
                        inline,
                        kv_key,
                    })
                }
            };
            SnapshotReply::Located(located)
        }
        SnapshotCall::Remove { grace_ms } => {
            SnapshotReply::Removed(super::kept::remove(store, readable_until(now, *grace_ms))?)
        }
        SnapshotCall::KeysInUse => SnapshotReply::Keys(keys::keys_in_use(store, env.now_ms)?),
        SnapshotCall::Wipe => SnapshotReply::Keys(keys::wipe(store)?),
        SnapshotCall::CheckPrecondition { precondition } => {
            rules::check_precondition(store, precondition.as_ref())?;
            SnapshotReply::Done
        }
        SnapshotCall::ImportReserve {
            chunk_size,
            pending_ttl_ms,
        } => SnapshotReply::Reserved(chunk_calls::import_reserve(
            store,
            *chunk_size,
            *pending_ttl_ms,
            now,
        )?),
        SnapshotCall::ImportRecord {
            version,
            chunks,
            pending_ttl_ms,
        } => {
            let times = Times::at(now, *pending_ttl_ms, 0);
            SnapshotReply::Recorded(chunk_calls::import_record(store, *version, chunks, &times)?)
        }
        SnapshotCall::CommitManifest {
            manifest,
            precondition,
            event_watermark,
            limit,
            sha256_from_chunks,
            grace_ms,
        } => {
            rules::check_size(manifest.size, *limit)?;
            rules::check_precondition(store, precondition.as_ref())?;
            let readable_until = readable_until(now, *grace_ms);
            super::kept::keep_current(store, now)?;
            let committed =
                chunk_calls::commit(store, manifest, *event_watermark, now, readable_until)?;
            super::kept::made_current(
                store,
                &committed.meta,
                (now, &env.retention),
                readable_until,
            )?;
            if *sha256_from_chunks {
                chunk_calls::mark_hashed(store, committed.meta.version)?;
            }
            SnapshotReply::Committed(committed)
        }
        SnapshotCall::Plan {
            with_inline,
            version,
        } => SnapshotReply::Planned(chunk_calls::plan(store, *with_inline, *version)?),
        SnapshotCall::ChunkSource { chunk } => {
            SnapshotReply::ChunkAt(chunk_calls::source(store, chunk)?)
        }
        SnapshotCall::Chunk(call) => SnapshotReply::Chunk(chunk_store::execute(store, call, env)?),
    })
}

/// True when the call may change the object.
pub fn is_write(call: &SnapshotCall) -> bool {
    !matches!(
        call,
        SnapshotCall::Locate { .. }
            | SnapshotCall::Plan { .. }
            | SnapshotCall::ChunkSource { .. }
            | SnapshotCall::CheckPrecondition { .. }
    )
}
