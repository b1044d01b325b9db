//! The whole-file PUT and GET over chunked storage, a piece at a time so
//! that memory does not grow with the snapshot: the writer splits the body
//! into chunks as it arrives (each hashed, written to KV, and recorded in
//! batches) and commits their manifest at the end; the reader hands out
//! the chunks in order, each verified, and verifies the whole file's
//! sha256 before it hands out the last one.

use super::{
    MAX_INLINE_LIMIT, PutRequest, SnapshotMeta,
    chunk_calls::{ChunkSource, Plan},
    chunk_key,
    chunk_saga::{self, CommitRequest},
    digest::RunningHash,
    manifest::{Manifest, server_chunk_size},
    ranges, rules,
    saga::{self, BlobStore, CORRUPT, SHA256_MISMATCH, SnapshotObject, fetch_visible},
};
use crate::DomainError;

/// Chunks written to KV before the object records them, at most.
const RECORD_BATCH: usize = 64;

/// A whole-file PUT in progress.
pub struct WholeWriter {
    request: PutRequest,
    chunk_size: usize,
    started_at: i64,
    buffer: Vec<u8>,
    whole: RunningHash,
    size: u64,
    chunks: Vec<String>,
    unrecorded: Vec<(String, u64)>,
}

impl WholeWriter {
    /// A writer for a body of `size_hint` bytes, if known, that began at
    /// `started_at` (ms), into chunks of at least `min_chunk_size` bytes
    /// (the store's [`BlobStore::min_split_chunk_size`]).
    pub fn new(
        request: PutRequest,
        size_hint: Option<u64>,
        started_at: i64,
        min_chunk_size: u64,
    ) -> Self {
        let chunk_size = server_chunk_size(size_hint, request.limit, min_chunk_size);
        Self {
            request,
            chunk_size: usize::try_from(chunk_size).unwrap_or(usize::MAX),
            started_at,
            buffer: Vec::new(),
            whole: RunningHash::default(),
            size: 0,
            chunks: Vec::new(),
            unrecorded: Vec::new(),
        }
    }

    /// Takes the next bytes of the body, arriving at `now_ms`.
    pub async fn write(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
        mut data: &[u8],
        now_ms: i64,
    ) -> Result<(), DomainError> {
        if self.unrecorded.is_empty() {
            // The batch's uploads begin no earlier than now: a chunk a
            // collection deleted before then may be written again.
            self.started_at = now_ms;
        }
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
        let name = blobs.hash_chunk(&mut self.whole, &bytes).await;
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        blobs
            .put_batched(&chunk_key(&self.request.key_prefix, &name), bytes)
            .await?;
        self.chunks.push(name.clone());
        self.unrecorded.push((name, size));
        if self.unrecorded.len() >= RECORD_BATCH {
            self.record(object, blobs).await?;
        }
        Ok(())
    }

    /// Makes the batch's chunks durable together, then records them.
    async fn record(
        &mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
    ) -> Result<(), DomainError> {
        blobs.settle().await?;
        let batch = std::mem::take(&mut self.unrecorded);
        let upload = chunk_saga::Upload {
            started_at: self.started_at,
            pending_ttl_ms: self.request.pending_ttl_ms,
            clock_slack_ms: self.request.clock_slack_ms,
        };
        chunk_saga::record(object, batch, upload).await.map(drop)
    }

    /// Ends the body: checks `X-Stasis-Sha256`, then stores a small body
    /// inline or commits the chunks' manifest.
    pub async fn finish(
        mut self,
        object: &impl SnapshotObject,
        blobs: &impl BlobStore,
    ) -> Result<SnapshotMeta, DomainError> {
        let inline_limit = self.request.inline_limit.min(MAX_INLINE_LIMIT);
        if self.chunks.is_empty() && self.size <= inline_limit {
            self.whole.update(&self.buffer);
            self.check_sha256()?;
            return saga::put(object, blobs, &self.request, &self.buffer).await;
        }
        if !self.buffer.is_empty() {
            self.flush(object, blobs).await?;
        }
        let sha256 = self.check_sha256()?;
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
        };
        let meta = chunk_saga::commit(object, blobs, &self.request.key_prefix, request).await?;
        // Chunk keys a crash left unrecorded go with the next whole-file
        // PUT, as single keys did; the PUT has succeeded whatever it meets.
        let _ = saga::sweep(object, blobs, &self.request.key_prefix).await;
        Ok(meta)
    }

    /// The whole body's sha256 (every byte fed), checked against
    /// `X-Stasis-Sha256`.
    fn check_sha256(&mut self) -> Result<String, DomainError> {
        let sha256 = std::mem::take(&mut self.whole).finish_hex();
        match &self.request.expected_sha256 {
            Some(expected) if !expected.eq_ignore_ascii_case(&sha256) => Err(DomainError::invalid(
                SHA256_MISMATCH,
                format!("the body hashes to {sha256}, not to the X-Stasis-Sha256 {expected}"),
            )),
            _ => Ok(sha256),
        }
    }
}

/// One chunk's bytes from KV (retried while KV does not show them yet),
/// verified against its name.
pub async fn read_chunk(
    blobs: &impl BlobStore,
    key_prefix: &str,
    name: &str,
) -> Result<Vec<u8>, DomainError> {
    let bytes = fetch_visible(blobs, &chunk_key(key_prefix, name)).await?;
    chunk_saga::verify_chunk(blobs, name, &bytes).await?;
    Ok(bytes)
}

/// A whole-file GET in progress.
pub struct WholeReader {
    plan: Plan,
    key_prefix: String,
    next: usize,
    whole: RunningHash,
    read: u64,
    done: bool,
}

impl WholeReader {
    /// A reader of `plan` (made with its inline bytes).
    pub fn new(plan: Plan, key_prefix: String) -> Self {
        Self {
            plan,
            key_prefix,
            next: 0,
            whole: RunningHash::default(),
            read: 0,
            done: false,
        }
    }

    /// The snapshot being read.
    pub fn meta(&self) -> &SnapshotMeta {
        &self.plan.meta
    }

    /// Whether every piece was handed out.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The next verified piece; `None` once the whole file was handed out.
    /// An error mid-way means the file cannot be served whole: the
    /// response must be cut, never completed.
    pub async fn next_piece(
        &mut self,
        blobs: &impl BlobStore,
    ) -> Result<Option<Vec<u8>>, DomainError> {
        if self.done {
            return Ok(None);
        }
        let bytes = match &mut self.plan.source {
            ChunkSource::Inline { bytes } => Some(bytes.take().unwrap_or_default()),
            ChunkSource::Key { key } => Some(fetch_visible(blobs, key).await?),
            ChunkSource::Chunks => match self.plan.chunks.get(self.next) {
                None => None,
                Some(name) => {
                    let bytes = read_chunk(blobs, &self.key_prefix, name).await?;
                    self.next += 1;
                    Some(bytes)
                }
            },
        };
        let last = match self.plan.source {
            ChunkSource::Chunks => self.next >= self.plan.chunks.len(),
            _ => true,
        };
        if let Some(bytes) = &bytes {
            self.whole.update(bytes);
            self.read += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        }
        if last {
            self.done = true;
            self.verify_whole()?;
        }
        Ok(bytes.or_else(|| Some(Vec::new())).filter(|b| !b.is_empty()))
    }

    /// The chunks not yet read.
    pub fn chunks_left(&self) -> usize {
        match self.plan.source {
            ChunkSource::Chunks if !self.done => self.plan.chunks.len().saturating_sub(self.next),
            _ => 0,
        }
    }

    /// Hands the chunks not yet read out as consecutive ranges of at most
    /// `per_range` ([`ranges::ranges`]), for a runtime that reads each
    /// range elsewhere; their bytes come back, in order, through
    /// [`Self::accept`], and [`Self::finish`] checks the whole file.
    pub fn take_ranges(&mut self, per_range: usize) -> Vec<Vec<String>> {
        let total = self.next + self.chunks_left();
        let planned = ranges::ranges(self.next, total, per_range);
        self.next = total;
        planned
            .into_iter()
            .filter_map(|range| self.plan.chunks.get(range).map(<[String]>::to_vec))
            .collect()
    }

    /// Takes bytes of a range [`Self::take_ranges`] handed out (each chunk
    /// verified by whoever read it).
    pub fn accept(&mut self, bytes: &[u8]) {
        self.whole.update(bytes);
        self.read += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    }

    /// Checks the whole file once every range was accepted: call it before
    /// the last piece goes out. Checks only once.
    pub fn finish(&mut self) -> Result<(), DomainError> {
        if self.done {
            return Ok(());
        }
        self.done = true;
        self.verify_whole()
    }

    /// Checks the whole file before its last piece goes out.
    fn verify_whole(&mut self) -> Result<(), DomainError> {
        let actual = std::mem::take(&mut self.whole).finish_hex();
        let meta = &self.plan.meta;
        if actual == meta.sha256 && self.read == meta.size {
            return Ok(());
        }
        Err(DomainError::Storage(format!(
            "{CORRUPT}: snapshot version {} is corrupt: its {} bytes hash to {actual}, the \
             metadata records {} ({} bytes); refusing to serve them",
            meta.version, self.read, meta.sha256, meta.size
        )))
    }

    /// Reads every piece into one buffer (an export's snapshot).
    pub async fn read_all(mut self, blobs: &impl BlobStore) -> Result<Vec<u8>, DomainError> {
        let mut all = Vec::with_capacity(usize::try_from(self.plan.meta.size).unwrap_or(0));
        while let Some(piece) = self.next_piece(blobs).await? {
            all.extend_from_slice(&piece);
        }
        Ok(all)
    }
}
