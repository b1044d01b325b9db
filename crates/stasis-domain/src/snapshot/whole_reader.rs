//! The whole-file GET over chunked storage, a piece at a time: the chunks
//! in order, each verified, and the whole file's sha256 verified before
//! the last one is handed out. A manifest whose sha256 the server itself
//! computed over those very chunks (a whole-file PUT) is not hashed
//! again: chunks that each match their name are that file.

use super::{
    SnapshotMeta,
    chunk_calls::{ChunkSource, Plan},
    ranges,
};
use crate::{
    DomainError,
    chunk_store::{
        digest::{CORRUPT, RunningHash},
        ports::{BlobStore, fetch_visible},
        saga::read_chunk,
    },
};

/// A whole-file GET in progress.
pub struct WholeReader {
    plan: Plan,
    key_prefix: String,
    next: usize,
    /// The whole file's running hash, when it must be checked.
    whole: Option<RunningHash>,
    read: u64,
    done: bool,
}

impl WholeReader {
    /// A reader of `plan` (made with its inline bytes).
    pub fn new(plan: Plan, key_prefix: String) -> Self {
        let whole = (!plan.sha256_from_chunks).then(RunningHash::default);
        Self {
            plan,
            key_prefix,
            next: 0,
            whole,
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
            self.accept(bytes);
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
        if let Some(whole) = &mut self.whole {
            whole.update(bytes);
        }
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
        let meta = &self.plan.meta;
        let actual = match self.whole.take() {
            Some(whole) => whole.finish_hex(),
            None => meta.sha256.clone(),
        };
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
