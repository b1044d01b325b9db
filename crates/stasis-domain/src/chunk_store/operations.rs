//! The chunk steps the agent object answers: each call and the reply it
//! reads. The chunk saga runs them through its object port
//! ([`super::ports::ChunkObject`]); a runtime carries them inside the
//! calls of an owner (kilo.db's: a snapshot call).

use super::{
    calls::{ChunkCall, ChunkReply},
    claims::{Claim, Taken},
};
use crate::typed_operation::{Operation, operations};

/// A chunk step that reads as an `R`.
pub type ChunkOperation<R> = Operation<ChunkCall, ChunkReply, R>;

use ChunkCall as C;
use ChunkReply as R;

operations! {
    ChunkOperation<ChunkCall, ChunkReply>;
    /// Which of these chunks the store lacks.
    missing(chunks: Vec<String>, pending_ttl_ms: i64) -> Vec<String>
        = C::Missing { chunks, pending_ttl_ms }, R::Chunks(missing) => missing;
    /// Claims chunks for an upload before their keys are written.
    claim_uploads(chunks: Vec<String>, pending_ttl_ms: i64, stale_before: i64) -> Vec<Claim>
        = C::ClaimUploads { chunks, pending_ttl_ms, stale_before }, R::Claims(claims) => claims;
    /// Records chunks an upload claimed and KV now holds; whether each was
    /// new.
    record_chunks(chunks: Vec<(String, u64)>, pending_ttl_ms: i64) -> Vec<bool>
        = C::RecordChunks { chunks, pending_ttl_ms }, R::Recorded(fresh) => fresh;
    /// Takes up to `limit` unreferenced chunks for deletion.
    collect_take(limit: u64, stale_before: i64) -> Taken<String>
        = C::CollectTake { limit, stale_before }, R::Taken(taken) => taken;
    /// The KV keys of a collection's chunks are deleted.
    collect_done(chunks: Vec<String>, claim_at: i64) -> ()
        = C::CollectDone { chunks, claim_at }, R::Done => ();
    /// Takes for deletion the chunks found in KV that no row claims.
    claim_orphans(chunks: Vec<String>) -> Taken<String>
        = C::ClaimOrphans { chunks }, R::Taken(claimed) => claimed;
    /// Each chunk's recorded size, `None` where the store lacks it.
    stored_sizes(chunks: Vec<String>) -> Vec<Option<u64>>
        = C::StoredSizes { chunks }, R::Sizes(sizes) => sizes;
    /// Each chunk's size and origin (`None`: this folder), `None` where the
    /// store lacks it.
    located(chunks: Vec<String>) -> Vec<Option<(u64, Option<String>)>>
        = C::Located { chunks }, R::Located(located) => located;
    /// Records a fork's chunks whose keys another agent's folder holds.
    adopt(chunks: Vec<(String, u64, String)>, pending_ttl_ms: i64) -> ()
        = C::Adopt { chunks, pending_ttl_ms }, R::Done => ();
    /// Fork `holder` holds these chunks here.
    hold(holder: String, chunks: Vec<String>) -> ()
        = C::Hold { holder, chunks }, R::Done => ();
    /// Fork `holder` releases its hold; whether it had one.
    release_hold(holder: String, grace_ms: i64) -> bool
        = C::ReleaseHold { holder, grace_ms }, R::Existed(existed) => existed;
}
