//! The whole-file PUT and GET over chunked storage, a piece at a time so
//! that memory does not grow with the snapshot: the writer splits the body
//! into chunks as it arrives (each hashed and staged; a batch at a time
//! claimed from the agent's object, published under its key, and recorded)
//! and commits their manifest at the end, or, for an import,
//! stages it for the import's commit ([`WholeWriter::for_import`]); the
//! reader hands out the chunks in order, each verified, and verifies the
//! whole file's sha256 before it hands out the last one.

use super::{
    MAX_INLINE_LIMIT, PutRequest, SnapshotMeta, StagedSnapshot,
    chunk_saga::{self, CommitRequest},
    manifest::{Manifest, server_chunk_size},
    operations as snapshot_op,
    ports::SnapshotObject,
    rules, saga,
};
use crate::{
    DomainError,
    chunk_store::{
        self,
        claims::Claim,
        digest::{RunningHash, SHA256_MISMATCH},
        ports::{BlobStore, StagedChunk},
    },
};

pub use super::whole_reader::WholeReader;

/// Chunks staged before they are claimed, published and recorded, at
/// most (and at most the store's [`BlobStore::max_staged_bytes`]).
const RECORD_BATCH: usize = 64;

/// A whole-file PUT in progress.
pub struct WholeWriter {
    request: PutRequest,
    chunk_size: usize,
    buffer: Vec<u8>,
    whole: RunningHash,
    size: u64,
    /// The recorded chunks' names, in order.
    chunks: Vec<String>,
    /// The chunks staged since the last record.
    unrecorded: Vec<StagedChunk>,
    target: Target,
}

/// Where the chunks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A manifest committed at the end (a whole-file PUT).
    Commit,
    /// An import's manifest, under the version reserved with its first
    /// chunks.
    Import(Option<u64>),
}

impl WholeWriter {
    /// A writer for a body of `size_hint` bytes, if known, into chunks of
    /// at least `min_chunk_size` bytes (the store's
    /// [`BlobStore::min_split_chunk_size`]).
    pub fn new(request: PutRequest, size_hint: Option<u64>, min_chunk_size: u64) -> Self {
        let chunk_size = server_chunk_size(size_hint, request.limit, min_chunk_size);
        Self {
            request,
            chunk_size: usize::try_from(chunk_size).unwrap_or(usize::MAX),
            buffer: Vec::new(),
            whole: RunningHash::default(),
            size: 0,
            chunks: Vec::new(),
            unrecorded: Vec::new(),
            target: Target::Commit,
        }
    }

    /// A writer of an import's snapshot: its chunks are named by a manifest
    /// being written (so no collection takes them while the import lasts)
    /// and [`Self::stage`] hands it to the import instead of committing.
    pub fn for_import(request: PutRequest, size_hint: Option<u64>, min_chunk_size: u64) -> Self {
        Self {
            target: Target::Import(None),
            ..Self::new(request, size_hint, min_chunk_size)
        }
    }

    /// The bytes taken so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Takes the next bytes of the body.
    pub async fn write(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
        mut data: &[u8],
    ) -> Result<(), DomainError> {
        self.size += u64::try_from(data.len()).unwrap_or(u64::MAX);
        rules::check_size(self.size, self.request.limit)?;
        while !data.is_empty() {
            // A full buffer is written only once more bytes follow, so a
            // body that fits the inline limit never reaches KV.
            if self.buffer.len() == self.chunk_size {
                self.flush(object, blobs).await?;
                // The next chunk's room at once, not grown by copies.
                self.buffer.reserve_exact(self.chunk_size);
            }
            let room = self.chunk_size - self.buffer.len();
            let (now, later) = data.split_at(room.min(data.len()));
            self.buffer.extend_from_slice(now);
            data = later;
        }
        Ok(())
    }

    async fn flush(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
    ) -> Result<(), DomainError> {
        let bytes = std::mem::take(&mut self.buffer);
        // Hashed and staged in the background where the store can.
        let staged = blobs
            .stage_chunk(&self.request.key_prefix, &mut self.whole, bytes)
            .await?;
        self.unrecorded.push(staged);
        let unrecorded_bytes: u64 = self.unrecorded.iter().map(|chunk| chunk.size).sum();
        if self.unrecorded.len() >= RECORD_BATCH || unrecorded_bytes >= blobs.max_staged_bytes() {
            self.record(object, blobs).await?;
        }
        Ok(())
    }

    /// Claims the staged chunks' names, makes them durable and visible
    /// together, then records them.
    async fn record(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
    ) -> Result<(), DomainError> {
        blobs.staged_names().await?;
        let mut staged = std::mem::take(&mut self.unrecorded);
        let batch = named(&staged)?;
        let upload = chunk_store::saga::Upload {
            pending_ttl_ms: self.request.pending_ttl_ms,
            stale_before: self.request.stale_before,
        };
        let names = batch.iter().map(|(name, _)| name.clone()).collect();
        let claims = chunk_store::saga::claim(object, blobs, names, upload).await?;
        for (chunk, claim) in staged.iter_mut().zip(&claims) {
            if *claim == Claim::Held {
                chunk.skip();
            }
        }
        blobs.publish(&self.request.key_prefix, staged).await?;
        self.chunks
            .extend(batch.iter().map(|(name, _)| name.clone()));
        match self.target {
            Target::Commit => chunk_store::saga::record(object, batch, upload)
                .await
                .map(drop),
            Target::Import(version) => {
                let version = match version {
                    Some(version) => version,
                    None => self.reserve_import(object).await?,
                };
                let record = snapshot_op::import_record(version, batch, upload.pending_ttl_ms);
                object.run(record).await.map(drop)
            }
        }
    }

    async fn reserve_import(&mut self, object: &impl SnapshotObject) -> Result<u64, DomainError> {
        let reserve = snapshot_op::import_reserve(
            u64::try_from(self.chunk_size).unwrap_or(u64::MAX),
            self.request.pending_ttl_ms,
        );
        let reserved = object.run(reserve).await?;
        self.target = Target::Import(Some(reserved.version));
        Ok(reserved.version)
    }

    /// Checks the whole file's sha256 against `X-Stasis-Sha256`: every
    /// byte must have been fed, by a flush or (inline) from the buffer.
    async fn check_whole(&mut self, blobs: &impl BlobStore) -> Result<String, DomainError> {
        let sha256 = blobs.finish_whole(std::mem::take(&mut self.whole)).await?;
        if let Some(expected) = &self.request.expected_sha256
            && !expected.eq_ignore_ascii_case(&sha256)
        {
            return Err(DomainError::invalid(
                SHA256_MISMATCH,
                format!("the body hashes to {sha256}, not to the X-Stasis-Sha256 {expected}"),
            ));
        }
        Ok(sha256)
    }

    /// Whether the body so far stays inline (nothing reached KV).
    fn stays_inline(&self) -> bool {
        self.chunks.is_empty()
            && self.unrecorded.is_empty()
            && self.size <= self.request.inline_limit.min(MAX_INLINE_LIMIT)
    }

    /// Ends an import's snapshot (a writer from [`Self::for_import`]),
    /// which must hash to `sha256`: a small one is staged inline, a larger
    /// one's last chunks are recorded and its manifest handed over, for the
    /// import to stage and commit. On an error, [`Self::abandon`] it.
    pub async fn stage(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
        sha256: &str,
        event_watermark: u64,
    ) -> Result<StagedSnapshot, DomainError> {
        self.request.expected_sha256 = Some(sha256.to_owned());
        self.request.event_watermark = Some(event_watermark);
        if self.stays_inline() {
            self.whole.update(&self.buffer);
            self.check_whole(blobs).await?;
            let body = std::mem::take(&mut self.buffer);
            return saga::stage(object, blobs, &self.request, &body).await;
        }
        if !self.buffer.is_empty() {
            self.flush(object, blobs).await?;
        }
        let sha256 = self.check_whole(blobs).await?;
        self.record(object, blobs).await?;
        let Target::Import(Some(version)) = self.target else {
            return Err(DomainError::Storage(
                "an import's chunked snapshot has no reserved version".into(),
            ));
        };
        Ok(StagedSnapshot {
            version,
            sha256,
            size: self.size,
            event_watermark,
            kv_key: None,
            inline: None,
            chunk_size: Some(u64::try_from(self.chunk_size).unwrap_or(u64::MAX)),
        })
    }

    /// Gives up an import's manifest still being written (the import was
    /// refused): it is dropped, and its chunks go with the next collection.
    /// Best effort: a later sweep or import drops it otherwise.
    pub async fn abandon(&self, object: &impl SnapshotObject) {
        if let Target::Import(Some(version)) = self.target {
            let _ = object.run(snapshot_op::abandon(version)).await;
        }
    }

    /// Ends the body: checks `X-Stasis-Sha256`, then stores a small body
    /// inline or commits the chunks' manifest. What the new version
    /// superseded is the caller's to [`saga::sweep`] after.
    pub async fn finish(
        mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
    ) -> Result<SnapshotMeta, DomainError> {
        if self.stays_inline() {
            self.whole.update(&self.buffer);
            self.check_whole(blobs).await?;
            return saga::put(object, blobs, &self.request, &self.buffer).await;
        }
        if !self.buffer.is_empty() {
            self.flush(object, blobs).await?;
        }
        let sha256 = self.check_whole(blobs).await?;
        self.record(object, blobs).await?;
        let manifest = Manifest {
            size: self.size,
            sha256,
            chunk_size: u64::try_from(self.chunk_size).unwrap_or(u64::MAX),
            chunks: self.chunks,
        };
        let request = CommitRequest {
            manifest,
            precondition: self.request.precondition,
            event_watermark: self.request.event_watermark,
            limit: self.request.limit,
            sha256_from_chunks: true,
            grace_ms: self.request.grace_ms,
        };
        chunk_saga::commit(object, blobs, request).await
    }
}

/// The staged chunks' names (known once the store's `staged_names`
/// returned) and sizes.
fn named(staged: &[StagedChunk]) -> Result<Vec<(String, u64)>, DomainError> {
    staged
        .iter()
        .map(|chunk| match chunk.name.get() {
            Some(name) => Ok((name.to_owned(), chunk.size)),
            None => Err(DomainError::Storage(
                "a chunk was staged but the store never named it".into(),
            )),
        })
        .collect()
}
