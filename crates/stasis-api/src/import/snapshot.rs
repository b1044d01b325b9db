//! An import's snapshot as its bytes stream in: split into the server's
//! chunks as they decode, each hashed and written to KV once full and
//! recorded under the import's manifest (which keeps them from collection
//! while the import lasts), the whole sha256 and the size checked at the
//! end, and the snapshot limit enforced from the header's `size` or as the
//! bytes pass it. A small snapshot stays inline. Storing is the domain's
//! `WholeWriter`; this adds the manifest's wording of its refusals.

use super::{input::invalid, snapshot_part::SnapshotHead};
use crate::{Objects, Snapshots, error::ApiError};
use stasis_domain::{
    chunk_store::{self, digest::SHA256_MISMATCH, ports::BlobStore},
    ids::AgentKey,
    operation::snapshot as snapshot_op,
    snapshot::{self, PutRequest, StagedSnapshot, ports::SnapshotObject, whole::WholeWriter},
};

/// A snapshot whose bytes are streaming in, and the KV handle they go to
/// (one handle, so that a batch written is settled by it).
pub(super) struct Incoming<B> {
    writer: WholeWriter,
    blobs: B,
    limit: u64,
}

impl<B: BlobStore> Incoming<B> {
    /// `data_base64` begins; `size` is the header's, when it came first.
    pub fn begin<O>(objects: &O, key: &AgentKey, size: Option<u64>) -> Result<Self, ApiError>
    where
        O: Objects + Snapshots<Blobs = B>,
    {
        let limit = objects.snapshot_limit();
        check_limit(size, limit)?;
        let request = PutRequest {
            expected_sha256: None,
            precondition: None,
            event_watermark: None,
            inline_limit: objects.snapshot_inline_limit(),
            key_prefix: chunk_store::key_prefix(key),
            limit,
            pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
            stale_before: objects.snapshot_claims_stale_before(),
            grace_ms: 0,
        };
        let blobs = objects.snapshot_blobs()?;
        let min_chunk_size = blobs.min_split_chunk_size();
        Ok(Self {
            writer: WholeWriter::for_import(request, size, min_chunk_size),
            blobs,
            limit,
        })
    }

    /// Takes the next decoded bytes (413 `snapshot_too_large` once they
    /// pass the limit).
    pub async fn write<O>(
        &mut self,
        objects: &O,
        key: &AgentKey,
        bytes: &[u8],
    ) -> Result<(), ApiError>
    where
        O: Objects + Snapshots<Blobs = B>,
    {
        let object = objects.snapshot_object(key);
        Ok(self.writer.write(&object, &self.blobs, bytes).await?)
    }

    /// Every byte came: checks them against the header and hands the
    /// stored snapshot over for staging.
    pub async fn finish<O>(
        &mut self,
        objects: &O,
        key: &AgentKey,
        head: &SnapshotHead,
    ) -> Result<StagedSnapshot, ApiError>
    where
        O: Objects + Snapshots<Blobs = B>,
    {
        check_limit(Some(head.size), self.limit)?;
        let object = objects.snapshot_object(key);
        self.writer
            .stage(&object, &self.blobs, &head.sha256, head.event_watermark)
            .await
            .map_err(|err| {
                if err.code() == SHA256_MISMATCH {
                    invalid(
                        "snapshot.sha256",
                        "does not match the bytes of snapshot.data_base64",
                    )
                } else {
                    ApiError::from(err)
                }
            })
    }

    /// Drops what the import wrote so far (it was refused).
    pub async fn abandon<O>(&self, objects: &O, key: &AgentKey)
    where
        O: Objects + Snapshots<Blobs = B>,
    {
        self.writer.abandon(&objects.snapshot_object(key)).await;
    }
}

/// Gives a staged snapshot's version up (its staging was refused); best
/// effort, since the next import or sweep drops it anyway.
pub(super) async fn abandon<O: Snapshots>(objects: &O, key: &AgentKey, version: u64) {
    let step = snapshot_op::abandon(version);
    let _ = objects.snapshot_object(key).run(step).await;
}

/// 413 `snapshot_too_large` with `limit` for a size past it.
fn check_limit(size: Option<u64>, limit: u64) -> Result<(), ApiError> {
    match size {
        Some(size) if size > limit => Err(ApiError::from(snapshot::too_large(limit))),
        _ => Ok(()),
    }
}
