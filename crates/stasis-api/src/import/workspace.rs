//! An import's workspace: its head is recorded as it arrives, its chunks
//! and pages (`workspace_chunks`, in any part) are stored as they arrive
//! (each verified against its name, kept uncommitted for the pending
//! time), and before the import's commit the pages are read and checked
//! and a version naming them all is staged; the commit makes it current.

use super::input::invalid;
use crate::{Snapshots, error::ApiError, workspace_http::ManifestBody};
use base64::{Engine as _, engine::general_purpose::STANDARD};
use stasis_domain::{
    agent_state::ManifestChunk,
    chunk_store::{self, claims::Claim, ports::BlobStore as _, saga::Upload},
    ids::AgentKey,
    workspace::TreeLimits,
    workspace_store::{
        CommitArgs, Precondition, operations as op, ports::WorkspaceObject as _, saga,
        staged::StagedHead,
    },
};

/// Records `workspace`, the head.
pub(super) async fn stage_head(
    objects: &impl Snapshots,
    key: &AgentKey,
    body: ManifestBody,
) -> Result<(), ApiError> {
    let (head, event_watermark) = body.into_head()?;
    let staged = StagedHead {
        head,
        event_watermark,
    };
    let object = objects.snapshot_object(key);
    Ok(object.run_workspace(op::stage_head(staged)).await?)
}

/// Chunks of `workspace_chunks` decoded and checked, stored a batch at a
/// time (one claim, the KV writes, one record) rather than one by one.
#[derive(Default)]
pub(super) struct ChunkBatch {
    chunks: Vec<(String, Vec<u8>)>,
    bytes: usize,
}

/// A batch is stored once it holds this many chunks or bytes.
const BATCH_CHUNKS: usize = 256;
const BATCH_BYTES: usize = 16 * 1024 * 1024;

impl ChunkBatch {
    /// Takes element `index` of `workspace_chunks` (400 `invalid_manifest`
    /// for a malformed name, bad base64, or bytes that do not hash to the
    /// name), storing the batch once it is full.
    pub async fn add(
        &mut self,
        objects: &impl Snapshots,
        key: &AgentKey,
        chunk: ManifestChunk,
        index: u64,
    ) -> Result<(), ApiError> {
        let path = |field: &str| format!("workspace_chunks[{index}].{field}");
        let name = chunk.sha256;
        let lower_hex =
            name.len() == 64 && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !lower_hex {
            return Err(invalid(&path("sha256"), "must be 64 lowercase hex digits"));
        }
        let bytes = STANDARD
            .decode(chunk.data_base64.as_bytes())
            .map_err(|_| invalid(&path("data_base64"), "is not base64"))?;
        if chunk_store::sha256_hex(&bytes) != name {
            return Err(invalid(&path("data_base64"), "does not hash to its sha256"));
        }
        self.bytes += bytes.len();
        self.chunks.push((name, bytes));
        if self.chunks.len() >= BATCH_CHUNKS || self.bytes >= BATCH_BYTES {
            self.store(objects, key).await?;
        }
        Ok(())
    }

    /// Stores what the batch holds: claims, KV writes, then the record.
    pub async fn store(
        &mut self,
        objects: &impl Snapshots,
        key: &AgentKey,
    ) -> Result<(), ApiError> {
        let chunks = std::mem::take(&mut self.chunks);
        self.bytes = 0;
        if chunks.is_empty() {
            return Ok(());
        }
        let upload = Upload {
            pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
            stale_before: objects.snapshot_claims_stale_before(),
        };
        let (object, blobs) = (objects.snapshot_object(key), objects.snapshot_blobs()?);
        let prefix = chunk_store::key_prefix(key);
        let names: Vec<String> = chunks.iter().map(|(name, _)| name.clone()).collect();
        let claims = chunk_store::saga::claim(&object, &blobs, names, upload).await?;
        let mut written = Vec::new();
        for ((name, bytes), claim) in chunks.iter().zip(claims) {
            if claim == Claim::Write {
                blobs
                    .put(&chunk_store::chunk_key(&prefix, name), bytes)
                    .await?;
                written.push((name.clone(), u64::try_from(bytes.len()).unwrap_or(u64::MAX)));
            }
        }
        chunk_store::saga::record(&object, written, upload).await?;
        Ok(())
    }
}

/// Before the import's commit: the head's pages are read and checked, and
/// a version naming them and their chunks is staged (409 `chunks_missing`
/// for any the import did not bring). Nothing to do without a head.
pub(crate) async fn stage_version(
    objects: &impl Snapshots,
    key: &AgentKey,
) -> Result<(), ApiError> {
    let object = objects.snapshot_object(key);
    let Some(staged) = object.run_workspace(op::staged_head()).await? else {
        return Ok(());
    };
    let request = saga::CommitRequest {
        head: staged.head,
        precondition: Precondition::default(),
        event_watermark: staged.event_watermark,
        limits: TreeLimits {
            max_total_size: objects.workspace_limit(),
            ..TreeLimits::default()
        },
        grace_ms: 0,
        pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
    };
    let blobs = objects.snapshot_blobs()?;
    let prefix = chunk_store::key_prefix(key);
    let checked = saga::check(&object, &blobs, &prefix, &request).await?;
    let args = CommitArgs {
        head: request.head,
        files: checked.files,
        chunks: checked.chunks,
        precondition: request.precondition,
        event_watermark: request.event_watermark,
        grace_ms: 0,
    };
    Ok(object.run_workspace(op::stage(args)).await?)
}
