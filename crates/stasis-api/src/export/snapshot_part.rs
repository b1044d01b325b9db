//! The snapshot's bytes as base64, read chunk by chunk through the
//! whole-file reader (each chunk and the whole file verified) and encoded a
//! slice at a time, so that neither the bytes nor the encoded text (a third
//! larger) is ever held whole. This is the one place that knows how a
//! manifest carries a snapshot's bytes.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use stasis_domain::{
    DomainError,
    snapshot::{saga::BlobStore, whole::WholeReader},
};

/// Bytes encoded per chunk: a multiple of 3, so that only the last chunk
/// carries padding and the chunks join into one base64 text.
const CHUNK_BYTES: usize = 3 * 64 * 1024;

/// The snapshot being written.
pub(super) struct SnapshotPart {
    reader: WholeReader,
    /// Bytes read but not yet encoded (less than a chunk, plus one piece).
    carry: Vec<u8>,
    finished: bool,
}

impl SnapshotPart {
    pub fn new(reader: WholeReader) -> Self {
        Self {
            reader,
            carry: Vec::new(),
            finished: false,
        }
    }

    /// The next slice's base64; `None` once every byte is written. An
    /// error (a chunk that fails its sha256) cuts the export.
    pub async fn next_chunk(
        &mut self,
        blobs: &impl BlobStore,
    ) -> Result<Option<String>, DomainError> {
        while !self.finished && self.carry.len() < CHUNK_BYTES {
            match self.reader.next_piece(blobs).await? {
                Some(piece) => self.carry.extend_from_slice(&piece),
                None => self.finished = true,
            }
        }
        if self.carry.is_empty() {
            return Ok(None);
        }
        let take = self.carry.len().min(CHUNK_BYTES);
        let encoded = STANDARD.encode(&self.carry[..take]);
        self.carry.drain(..take);
        Ok(Some(encoded))
    }
}
