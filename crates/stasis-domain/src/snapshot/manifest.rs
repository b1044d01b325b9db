//! A chunked snapshot's manifest: the file's size and sha256, its chunk
//! size, and the sha256 of every chunk in order; and the rules a manifest
//! must follow before any store is asked about its chunks.

use crate::{DomainError, chunk_store::digest};
use serde::{Deserialize, Serialize};

/// The smallest chunk size: one SQLite page of the default size.
pub const MIN_CHUNK_SIZE: u64 = 4 * 1024;
/// The largest chunk size (and so the largest chunk upload).
pub const MAX_CHUNK_SIZE: u64 = 16 * 1024 * 1024;
/// The most chunks a manifest may name: its raw hashes (1 MiB) fit a
/// Durable Object row.
pub const MAX_CHUNKS: usize = 32_768;
/// The chunk size a client picks unless it has a reason not to: small
/// enough that a turn's scattered pages move about 1% of a 25 MB file.
pub const CLIENT_MIN_CHUNK_SIZE: u64 = 32 * 1024;
/// The most chunks the server's own split makes of a file of known size.
pub const SERVER_MAX_CHUNKS: u64 = 1024;

/// A manifest as it travels: JSON on the wire and between the worker and
/// the agent's object. Hashes are lowercase hex once [`Manifest::check`]
/// passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Bytes in the whole file.
    pub size: u64,
    /// Lowercase hex sha256 of the whole file: a client's claim, verified
    /// by every reader (a whole-file PUT's is the server's own, computed
    /// over the chunks' bytes).
    pub sha256: String,
    /// Every chunk but the last holds exactly this many bytes.
    pub chunk_size: u64,
    /// The chunks' sha256s, in file order.
    pub chunks: Vec<String>,
}

impl Manifest {
    /// Refuses a manifest that breaks the chunking rules (400
    /// `invalid_manifest`) and lowercases its hashes.
    pub fn check(mut self) -> Result<Self, DomainError> {
        let size_ok = self.chunk_size.is_power_of_two()
            && (MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size);
        if !size_ok {
            return Err(invalid(format!(
                "chunk_size must be a power of two from {MIN_CHUNK_SIZE} to {MAX_CHUNK_SIZE}; \
                 got {}",
                self.chunk_size
            )));
        }
        let expected = chunk_count(self.size, self.chunk_size);
        if u64::try_from(self.chunks.len()).ok() != Some(expected) {
            return Err(invalid(format!(
                "a file of {} bytes in chunks of {} has {expected} chunks; the manifest names {}",
                self.size,
                self.chunk_size,
                self.chunks.len()
            )));
        }
        if self.chunks.len() > MAX_CHUNKS {
            return Err(invalid(format!(
                "a manifest names at most {MAX_CHUNKS} chunks; pick a larger chunk_size"
            )));
        }
        if !digest::is_sha256_hex(&self.sha256) {
            return Err(invalid("sha256 must be 64 hex digits"));
        }
        self.sha256.make_ascii_lowercase();
        for (index, hash) in self.chunks.iter_mut().enumerate() {
            if !digest::is_sha256_hex(hash) {
                return Err(invalid(format!(
                    "chunk {index} is not 64 hex digits: {hash:?}"
                )));
            }
            hash.make_ascii_lowercase();
        }
        Ok(self)
    }

    /// The bytes chunk `index` holds.
    pub fn chunk_len(&self, index: usize) -> u64 {
        let start = u64::try_from(index)
            .unwrap_or(u64::MAX)
            .saturating_mul(self.chunk_size);
        self.size.saturating_sub(start).min(self.chunk_size)
    }
}

/// `ceil(size / chunk_size)`; an empty file has no chunks.
pub fn chunk_count(size: u64, chunk_size: u64) -> u64 {
    size.div_ceil(chunk_size.max(1))
}

/// The chunk size a client picks for a file of `size` bytes:
/// `max(32 KiB, next_pow2(ceil(size / 32768)))`.
pub fn client_chunk_size(size: u64) -> u64 {
    let per_chunk = size.div_ceil(MAX_CHUNKS as u64).next_power_of_two();
    per_chunk.clamp(CLIENT_MIN_CHUNK_SIZE, MAX_CHUNK_SIZE)
}

/// The chunk size of the server's own split: at least `floor` (rounded up
/// to a power of two, within the chunk size bounds), at most
/// [`SERVER_MAX_CHUNKS`] chunks when the size is known, and never more
/// chunks than a manifest holds for a file at `limit`.
pub fn server_chunk_size(size_hint: Option<u64>, limit: u64, floor: u64) -> u64 {
    let for_limit = limit.div_ceil(MAX_CHUNKS as u64).next_power_of_two();
    let for_size = size_hint
        .map(|size| size.div_ceil(SERVER_MAX_CHUNKS).next_power_of_two())
        .unwrap_or(for_limit);
    for_size
        .max(for_limit)
        .max(floor.next_power_of_two())
        .clamp(MIN_CHUNK_SIZE, MAX_CHUNK_SIZE)
}

fn invalid(message: impl Into<String>) -> DomainError {
    DomainError::invalid("invalid_manifest", message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk_store::ports::SERVER_MIN_CHUNK_SIZE;

    fn manifest(size: u64, chunk_size: u64, count: usize) -> Manifest {
        Manifest {
            size,
            sha256: "A".repeat(64),
            chunk_size,
            chunks: vec!["b".repeat(64); count],
        }
    }

    fn code(manifest: Manifest) -> String {
        manifest
            .check()
            .map_or_else(|err| err.code().to_owned(), |_| "ok".into())
    }

    #[test]
    fn a_manifest_follows_the_chunking_rules() {
        assert_eq!(code(manifest(100_000, 32_768, 4)), "ok");
        assert_eq!(code(manifest(0, 4096, 0)), "ok");
        assert_eq!(code(manifest(100_000, 32_768, 3)), "invalid_manifest");
        assert_eq!(code(manifest(100_000, 30_000, 4)), "invalid_manifest");
        assert_eq!(code(manifest(100, 2048, 1)), "invalid_manifest");
        assert_eq!(code(manifest(1 << 30, 1 << 25, 32)), "invalid_manifest");
        let mut bad_hash = manifest(10, 4096, 1);
        bad_hash.chunks[0] = "x".into();
        assert_eq!(code(bad_hash), "invalid_manifest");
        let checked = manifest(10, 4096, 1).check().expect("valid");
        assert_eq!(checked.sha256, "a".repeat(64));
    }

    #[test]
    fn the_last_chunk_holds_the_rest() {
        let m = manifest(100_000, 32_768, 4);
        assert_eq!(m.chunk_len(0), 32_768);
        assert_eq!(m.chunk_len(3), 100_000 - 3 * 32_768);
    }

    #[test]
    fn chunk_sizes_bound_the_chunk_count() {
        assert_eq!(client_chunk_size(25_000_000), 32 * 1024);
        assert_eq!(client_chunk_size(1 << 30), 32 * 1024);
        assert_eq!(client_chunk_size(7 << 30), 256 * 1024);
        let floor = SERVER_MIN_CHUNK_SIZE;
        assert_eq!(server_chunk_size(Some(24 << 20), 1 << 30, floor), 1 << 20);
        assert_eq!(server_chunk_size(Some(4 << 30), 8 << 30, floor), 4 << 20);
        assert_eq!(server_chunk_size(None, 1 << 30, floor), 1 << 20);
        assert_eq!(server_chunk_size(Some(24 << 20), 1 << 30, 8 << 20), 8 << 20);
        assert_eq!(server_chunk_size(Some(100), 1 << 30, 3 << 20), 4 << 20);
        assert_eq!(
            server_chunk_size(Some(100), 1 << 30, 1 << 40),
            MAX_CHUNK_SIZE
        );
    }
}
