//! The chunking parameters a manifest was cut with. They travel in every
//! manifest so that the next version of the workspace is cut the same way:
//! other parameters would move every cut point and nothing would deduplicate
//! (restic refuses to change its chunker for the same reason).

use serde::{Deserialize, Serialize};

/// The chunker the client runs: FastCDC as published in 2020, normalisation
/// level 1, the gear table with seed 0 (the `fastcdc` crate's `v2020`).
pub const FASTCDC_2020: &str = "fastcdc-v2020";

/// The smallest `min_size` accepted (FastCDC's own lower bound).
pub const MIN_CHUNK_MIN: u32 = 64;
/// The largest `max_size` accepted: a chunk is one upload and one stored
/// value, so it stays well under the edge's per-request and KV limits.
pub const MAX_CHUNK_MAX: u32 = 16 * 1024 * 1024;

/// How a manifest's files were cut into chunks.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChunkParams {
    /// The algorithm and its version, e.g. [`FASTCDC_2020`]. A client that
    /// does not know it cannot cut the next version the same way.
    pub algorithm: String,
    /// No chunk but a file's last is shorter.
    pub min_size: u32,
    /// The size the cut points aim at.
    pub avg_size: u32,
    /// No chunk is longer.
    pub max_size: u32,
}

impl Default for ChunkParams {
    /// 16 KiB / 64 KiB / 256 KiB (casync's defaults): an edit in the middle
    /// of a file moves one or two chunks (~64-128 KiB), far under 1% of a
    /// 200 MB tree, while a 4 GiB workspace stays near 65,000 chunks (its
    /// manifest a few MB, paged), and most source files are one chunk.
    fn default() -> Self {
        Self {
            algorithm: FASTCDC_2020.to_owned(),
            min_size: 16 * 1024,
            avg_size: 64 * 1024,
            max_size: 256 * 1024,
        }
    }
}

impl ChunkParams {
    /// What makes these parameters unusable, if anything.
    pub fn problem(&self) -> Option<String> {
        let name_ok = !self.algorithm.is_empty()
            && self.algorithm.len() <= 64
            && self
                .algorithm
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !name_ok {
            return Some(format!(
                "chunking algorithm {:?} is not 1-64 characters of [A-Za-z0-9._-]",
                self.algorithm
            ));
        }
        let sizes_ok = MIN_CHUNK_MIN <= self.min_size
            && self.min_size <= self.avg_size
            && self.avg_size <= self.max_size
            && self.max_size <= MAX_CHUNK_MAX;
        if !sizes_ok {
            return Some(format!(
                "chunk sizes must satisfy {MIN_CHUNK_MIN} <= min <= avg <= max <= {MAX_CHUNK_MAX}; \
                 got {}/{}/{}",
                self.min_size, self.avg_size, self.max_size
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_bad_sizes_are_refused() {
        assert_eq!(ChunkParams::default().problem(), None);
        let mut params = ChunkParams::default();
        params.min_size = params.avg_size + 2;
        assert!(params.problem().is_some());
        params = ChunkParams::default();
        params.max_size = MAX_CHUNK_MAX + 2;
        assert!(params.problem().is_some());
        params = ChunkParams::default();
        params.algorithm = "fast cdc".into();
        assert!(params.problem().is_some());
    }
}
