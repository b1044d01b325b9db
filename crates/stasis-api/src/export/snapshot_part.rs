//! The snapshot's bytes as base64, a slice at a time, so that the encoded
//! text (a third larger than the bytes) is never held whole. This is the
//! one place that knows how a manifest carries a snapshot's bytes.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;

/// Bytes encoded per chunk: a multiple of 3, so that only the last chunk
/// carries padding and the chunks join into one base64 text.
const CHUNK_BYTES: usize = 3 * 64 * 1024;

/// The verified bytes of the snapshot being written.
pub(super) struct SnapshotPart {
    bytes: Bytes,
    offset: usize,
}

impl SnapshotPart {
    pub fn new(bytes: Bytes) -> Self {
        Self { bytes, offset: 0 }
    }

    /// The next slice's base64; `None` once every byte is written.
    pub fn next_chunk(&mut self) -> Option<String> {
        let slice = self.bytes.get(self.offset..)?;
        if slice.is_empty() {
            return None;
        }
        let slice = slice.get(..CHUNK_BYTES).unwrap_or(slice);
        self.offset += slice.len();
        Some(STANDARD.encode(slice))
    }
}
