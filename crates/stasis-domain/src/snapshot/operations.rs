//! The snapshot steps the agent object answers: each call and the reply it
//! reads (also named `operation::snapshot`). The sagas run them through
//! their object port ([`super::ports::SnapshotObject`]); a runtime carries
//! them in an agent call ([`crate::operation::agent::snapshot`]).

use super::{
    Committed, Located, Precondition, Reserved, SnapshotCall, SnapshotReply,
    call::chunk_reply,
    chunk_calls::{ChunkSource, Plan},
    manifest::Manifest,
};
use crate::{
    chunk_store::operations::ChunkOperation,
    typed_operation::{Operation, operations},
};

/// A snapshot step that reads as an `R`.
pub type SnapshotOperation<R> = Operation<SnapshotCall, SnapshotReply, R>;

/// A chunk store step as the snapshot step that carries it: how an object
/// port that reaches the agent's object through snapshot steps runs the
/// chunk store's.
pub fn chunk_step<R: 'static>(step: ChunkOperation<R>) -> SnapshotOperation<R> {
    step.within(SnapshotCall::Chunk, chunk_reply)
}

use SnapshotCall as C;
use SnapshotReply as R;

operations! {
    SnapshotOperation<SnapshotCall, SnapshotReply>;
    /// Checks `If-Match` early and hands out the next version.
    reserve(size: u64, precondition: Option<Precondition>, inline_limit: u64, key_prefix: String, limit: u64) -> Reserved
        = C::Reserve { size, precondition, inline_limit, key_prefix, limit },
          R::Reserved(reserved) => reserved;
    /// Switches the metadata to the reserved version, re-checking `If-Match`.
    #[allow(clippy::too_many_arguments, reason = "one argument per field of the call it builds")]
    commit(
        version: u64,
        sha256: String,
        size: u64,
        precondition: Option<Precondition>,
        event_watermark: Option<u64>,
        inline: Option<Vec<u8>>,
        kv_key: Option<String>,
        grace_ms: i64,
    ) -> Committed
        = C::Commit { version, sha256, size, precondition, event_watermark, inline, kv_key, grace_ms },
          R::Committed(committed) => committed;
    /// Gives a reservation up.
    abandon(version: u64) -> ()
        = C::Abandon { version }, R::Done => ();
    /// The current snapshot; its inline bytes when `with_bytes`.
    locate(with_bytes: bool) -> Option<Located>
        = C::Locate { with_bytes }, R::Located(located) => located;
    /// Drops the current snapshot; the KV key it had, if any.
    remove(grace_ms: i64) -> Option<String>
        = C::Remove { grace_ms }, R::Removed(key) => key;
    /// The KV keys a sweep must keep.
    keys_in_use() -> Vec<String>
        = C::KeysInUse, R::Keys(keys) => keys;
    /// Removes every snapshot row; the KV keys they named.
    wipe() -> Vec<String>
        = C::Wipe, R::Keys(keys) => keys;
    /// Refuses unless `If-Match` holds now.
    check_precondition(precondition: Option<Precondition>) -> ()
        = C::CheckPrecondition { precondition }, R::Done => ();
    /// Reserves an import's snapshot version; its manifest grows as chunks
    /// are recorded.
    import_reserve(chunk_size: u64, pending_ttl_ms: i64) -> Reserved
        = C::ImportReserve { chunk_size, pending_ttl_ms }, R::Reserved(reserved) => reserved;
    /// Records chunks KV now holds into the import's manifest; whether each
    /// was new.
    import_record(version: u64, chunks: Vec<(String, u64)>, pending_ttl_ms: i64) -> Vec<bool>
        = C::ImportRecord { version, chunks, pending_ttl_ms }, R::Recorded(fresh) => fresh;
    /// Switches the metadata to a manifest whose chunks the store holds.
    commit_manifest(manifest: Manifest, precondition: Option<Precondition>, event_watermark: Option<u64>, limit: u64, sha256_from_chunks: bool, grace_ms: i64) -> Committed
        = C::CommitManifest { manifest, precondition, event_watermark, limit, sha256_from_chunks, grace_ms },
          R::Committed(committed) => committed;
    /// The current snapshot as a manifest.
    plan(with_inline: bool) -> Option<Plan>
        = C::Plan { with_inline, version: None }, R::Planned(plan) => plan;
    /// A kept version (or the current one, by its number) as a manifest.
    plan_version(with_inline: bool, version: u64) -> Option<Plan>
        = C::Plan { with_inline, version: Some(version) }, R::Planned(plan) => plan;
    /// Where one chunk's bytes are.
    chunk_source(chunk: String) -> Option<ChunkSource>
        = C::ChunkSource { chunk }, R::ChunkAt(source) => source;
}
