//! The manifest of a chunked snapshot as it travels (`GET|PUT .../db-snapshot/manifest`), and
//! the checks a reader makes before trusting one.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::chunks::{ChunkedFile, chunk_count, chunk_len};
use super::is_sha256_hex;

/// What `PUT .../db-snapshot/manifest` sends.
#[derive(Debug, Serialize)]
pub struct ManifestUpload<'a> {
    /// Bytes in the file.
    pub size: u64,
    /// The hex sha256 of the whole file.
    pub sha256: &'a str,
    /// The chunk size.
    pub chunk_size: u64,
    /// The chunks' hashes, in file order.
    pub chunks: &'a [String],
    /// The event watermark stored with the snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_watermark: Option<u64>,
}

impl<'a> ManifestUpload<'a> {
    /// The manifest of `file`.
    pub fn of(file: &'a ChunkedFile, event_watermark: Option<u64>) -> Self {
        ManifestUpload {
            size: file.size,
            sha256: &file.sha256,
            chunk_size: file.chunk_size,
            chunks: &file.chunks,
            event_watermark,
        }
    }
}

/// What `GET .../db-snapshot/manifest` answers.
#[derive(Debug, Clone, Deserialize)]
pub struct Manifest {
    /// The snapshot's version.
    pub version: u64,
    /// The hex sha256 of the whole file.
    pub sha256: String,
    /// Bytes in the file.
    pub size: u64,
    /// The chunk size (an inline snapshot is one chunk of at least its size).
    pub chunk_size: u64,
    /// The chunks' hashes, in file order.
    pub chunks: Vec<String>,
    /// The event watermark stored with it.
    #[serde(default)]
    pub event_watermark: Option<u64>,
}

impl Manifest {
    /// Why a reader cannot assemble a file from this manifest, if it cannot.
    pub fn problem(&self) -> Option<String> {
        if !is_sha256_hex(&self.sha256) {
            return Some(format!("the file's sha256 {:?} is not 64 hex", self.sha256));
        }
        if self.chunk_size == 0 {
            return Some("chunk_size is 0".into());
        }
        let expected = chunk_count(self.size, self.chunk_size);
        if self.chunks.len() as u64 != expected {
            return Some(format!(
                "{} chunks listed, {expected} cover {} bytes in chunks of {}",
                self.chunks.len(),
                self.size,
                self.chunk_size
            ));
        }
        if let Some(bad) = self.chunks.iter().find(|c| !is_sha256_hex(c)) {
            return Some(format!("chunk hash {bad:?} is not 64 hex"));
        }
        None
    }

    /// Each distinct chunk with the positions (offsets) where it goes and its length, in order
    /// of first appearance. `None` when one hash sits at positions of different lengths (it
    /// cannot be the same bytes at both).
    pub fn placements(&self) -> Option<Vec<Placement>> {
        let mut by_hash: HashMap<String, usize> = HashMap::new();
        let mut placements: Vec<Placement> = Vec::new();
        for (index, sha) in self.chunks.iter().enumerate() {
            let index = index as u64;
            let len = chunk_len(self.size, self.chunk_size, index);
            let offset = index * self.chunk_size;
            let sha = sha.to_ascii_lowercase();
            match by_hash.get(&sha).and_then(|&i| placements.get_mut(i)) {
                Some(known) if known.len != len => return None,
                Some(known) => known.offsets.push(offset),
                None => {
                    by_hash.insert(sha.clone(), placements.len());
                    placements.push(Placement {
                        sha256: sha,
                        len,
                        offsets: vec![offset],
                    });
                }
            }
        }
        Some(placements)
    }
}

/// One distinct chunk of a manifest and where its bytes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Its hex sha256, lowercase.
    pub sha256: String,
    /// Its length.
    pub len: u64,
    /// The offsets it fills.
    pub offsets: Vec<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(size: u64, chunk_size: u64, chunks: &[&str]) -> Manifest {
        Manifest {
            version: 1,
            sha256: "a".repeat(64),
            size,
            chunk_size,
            chunks: chunks.iter().map(|c| c.repeat(64)).collect(),
            event_watermark: None,
        }
    }

    #[test]
    fn a_manifest_whose_count_does_not_cover_its_size_is_refused() {
        assert_eq!(manifest(100, 64, &["a", "b"]).problem(), None);
        assert!(manifest(100, 64, &["a"]).problem().is_some());
        assert!(manifest(100, 64, &["a", "b", "c"]).problem().is_some());
        assert!(manifest(100, 0, &[]).problem().is_some());
        assert!(manifest(100, 64, &["a", "g"]).problem().is_some());
        assert_eq!(manifest(0, 64, &[]).problem(), None);
        // An inline snapshot served as one chunk larger than the file.
        assert_eq!(manifest(100, 1 << 20, &["a"]).problem(), None);
    }

    #[test]
    fn a_repeated_chunk_is_fetched_once_and_placed_at_each_offset() {
        let placements = manifest(200, 64, &["a", "b", "a", "c"])
            .placements()
            .unwrap_or_default();
        let summary: Vec<(char, u64, Vec<u64>)> = placements
            .iter()
            .map(|p| {
                (
                    p.sha256.chars().next().unwrap_or('?'),
                    p.len,
                    p.offsets.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ('a', 64, vec![0, 128]),
                ('b', 64, vec![64]),
                ('c', 8, vec![192])
            ]
        );
    }

    #[test]
    fn one_hash_at_positions_of_different_lengths_is_refused() {
        assert!(manifest(100, 64, &["a", "a"]).placements().is_none());
    }
}
