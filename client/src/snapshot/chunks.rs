//! Fixed-offset chunking (docs/http-api.md, "Snapshots in chunks"): chunk `i` covers bytes
//! `[i·chunk_size, min(size, (i+1)·chunk_size))`, every chunk but the last exactly `chunk_size`
//! long. Fixed offsets suit a page-structured file: a changed SQLite page changes exactly the
//! chunk holding it, where content-defined chunking would gain nothing and cost a rolling hash.
//!
//! One pass over a file gives the sha256 of every chunk and of the whole file (sha2 picks the
//! CPU's SHA extensions at run time when it has them).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::mpsc::sync_channel;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The smallest chunk the client picks: 8 SQLite pages of 4 KiB, so six scattered changed pages
/// of a 25 MB database move 192 KiB (0.77 %).
pub const MIN_CHUNK_SIZE: u64 = 32 * 1024;
/// Bytes a scan reads at once (whole chunks of it go to the chunk hashing thread together).
const SCAN_BLOCK: usize = 1024 * 1024;
/// The largest chunk the protocol allows.
pub const MAX_CHUNK_SIZE: u64 = 16 * 1024 * 1024;
/// The most chunks the client's default chunk size gives.
pub const TARGET_MAX_CHUNKS: u64 = 32_768;

/// The client's chunk size for a file of `size` bytes: `max(32 KiB, next_pow2(⌈size / 32768⌉))`,
/// at most 16 MiB. Always a power of two, so chunks stay aligned to any SQLite page size.
pub fn chunk_size_for(size: u64) -> u64 {
    size.div_ceil(TARGET_MAX_CHUNKS)
        .checked_next_power_of_two()
        .unwrap_or(MAX_CHUNK_SIZE)
        .clamp(MIN_CHUNK_SIZE, MAX_CHUNK_SIZE)
}

/// How many chunks of `chunk_size` cover `size` bytes (`chunk_size` > 0).
pub fn chunk_count(size: u64, chunk_size: u64) -> u64 {
    size.div_ceil(chunk_size.max(1))
}

/// The byte length of chunk `index` of a file of `size` bytes.
pub fn chunk_len(size: u64, chunk_size: u64, index: u64) -> u64 {
    let start = index.saturating_mul(chunk_size);
    size.saturating_sub(start).min(chunk_size)
}

/// A file as chunks: its size, its sha256, and the sha256 of each chunk, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedFile {
    /// Bytes in the file.
    pub size: u64,
    /// The hex sha256 of the whole file.
    pub sha256: String,
    /// The chunk size used.
    pub chunk_size: u64,
    /// The hex sha256 of each chunk, in file order (duplicates kept).
    pub chunks: Vec<String>,
}

impl ChunkedFile {
    /// Reads `path` once, hashing each chunk of [`chunk_size_for`] its size and the whole file.
    pub fn scan(path: &Path) -> Result<Self> {
        let context = || format!("hashing {}", path.display());
        let file = File::open(path).map_err(|e| Error::io(context(), e))?;
        let size = file.metadata().map_err(|e| Error::io(context(), e))?.len();
        Self::scan_reader(file, chunk_size_for(size)).map_err(|e| Error::io(context(), e))
    }

    /// Hashes everything `reader` holds in chunks of `chunk_size` bytes: the whole file on this
    /// thread while another hashes the chunks, a block of several chunks at a time.
    pub fn scan_reader(mut reader: impl Read, chunk_size: u64) -> io::Result<Self> {
        let chunk_len = usize::try_from(chunk_size)
            .ok()
            .filter(|&len| len > 0)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "bad chunk size"))?;
        let block_len = chunk_len.max(SCAN_BLOCK / chunk_len * chunk_len);
        let (blocks, received) = sync_channel::<Vec<u8>>(2);
        let (whole, size, chunks) = std::thread::scope(|scope| {
            let chunk_hasher = scope.spawn(move || {
                let mut chunks = Vec::new();
                for block in received {
                    chunks.extend(
                        block
                            .chunks(chunk_len)
                            .map(|c| hex::encode(Sha256::digest(c))),
                    );
                }
                chunks
            });
            let mut whole = Sha256::new();
            let mut size = 0u64;
            loop {
                let mut block = vec![0u8; block_len];
                let filled = read_full(&mut reader, &mut block)?;
                block.truncate(filled);
                whole.update(&block);
                size += filled as u64;
                if filled == 0 || blocks.send(block).is_err() || filled < block_len {
                    break;
                }
            }
            drop(blocks);
            let chunks = chunk_hasher
                .join()
                .map_err(|_| io::Error::other("the chunk hashing thread panicked"))?;
            Ok::<_, io::Error>((whole, size, chunks))
        })?;
        Ok(ChunkedFile {
            size,
            sha256: hex::encode(whole.finalize()),
            chunk_size,
            chunks,
        })
    }

    /// Hashes `bytes` in chunks of [`chunk_size_for`] their length: the whole on this thread
    /// while another hashes the chunks.
    pub fn of_bytes(bytes: &[u8]) -> Self {
        let size = bytes.len() as u64;
        let chunk_size = chunk_size_for(size);
        let chunk_len = usize::try_from(chunk_size).unwrap_or(usize::MAX);
        let (whole, chunks) = std::thread::scope(|scope| {
            let chunks = scope.spawn(|| {
                bytes
                    .chunks(chunk_len)
                    .map(|c| hex::encode(Sha256::digest(c)))
                    .collect::<Vec<_>>()
            });
            let whole = hex::encode(Sha256::digest(bytes));
            let chunks = chunks
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (whole, chunks)
        });
        ChunkedFile {
            size,
            sha256: whole,
            chunk_size,
            chunks,
        }
    }

    /// The byte range of chunk `index`: its offset and length.
    pub fn range(&self, index: usize) -> (u64, u64) {
        let index = index as u64;
        (
            index * self.chunk_size,
            chunk_len(self.size, self.chunk_size, index),
        )
    }

    /// The position of the first chunk with hash `sha256`.
    pub fn position(&self, sha256: &str) -> Option<usize> {
        self.chunks.iter().position(|c| c == sha256)
    }

    /// The chunk hashes, each once, in order of first appearance.
    pub fn unique_chunks(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.chunks
            .iter()
            .filter(|c| seen.insert(c.as_str()))
            .cloned()
            .collect()
    }
}

/// Fills `buf` from `reader` unless the input ends first; answers the bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while let Some(rest) = buf.get_mut(filled..).filter(|rest| !rest.is_empty()) {
        match reader.read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// The hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;

    #[test]
    fn the_chunk_size_is_32_kib_up_to_1_gib_then_keeps_the_count_at_32768() {
        assert_eq!(chunk_size_for(0), 32 * KIB);
        assert_eq!(chunk_size_for(25_000_000), 32 * KIB);
        assert_eq!(chunk_size_for(1024 * MIB), 32 * KIB);
        assert_eq!(chunk_size_for(1024 * MIB + 1), 64 * KIB);
        assert_eq!(chunk_size_for(7 * 1024 * MIB), 256 * KIB);
        assert_eq!(chunk_size_for(u64::MAX), MAX_CHUNK_SIZE);
        for size in [1, 25_000_000, 1 << 30, 3 << 30, 100 << 30] {
            assert!(chunk_count(size, chunk_size_for(size)) <= TARGET_MAX_CHUNKS);
        }
    }

    #[test]
    fn a_25_mb_file_has_763_chunks_the_last_one_short() {
        let size = 25_000_000;
        let chunk = chunk_size_for(size);
        assert_eq!(chunk_count(size, chunk), 763);
        assert_eq!(chunk_len(size, chunk, 0), chunk);
        assert_eq!(chunk_len(size, chunk, 762), size - 762 * chunk);
        assert_eq!(chunk_len(size, chunk, 763), 0);
    }

    #[test]
    fn a_scan_hashes_each_chunk_and_the_whole_file() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let scanned = ChunkedFile::scan_reader(&bytes[..], 32 * 1024).expect("scan");
        assert_eq!(scanned.size, 100_000);
        assert_eq!(scanned.sha256, sha256_hex(&bytes));
        assert_eq!(scanned.chunks.len(), 4);
        for (i, chunk) in bytes.chunks(32 * 1024).enumerate() {
            assert_eq!(scanned.chunks[i], sha256_hex(chunk), "chunk {i}");
            let (offset, len) = scanned.range(i);
            assert_eq!((offset, len), ((i * 32 * 1024) as u64, chunk.len() as u64));
        }
    }

    #[test]
    fn an_exact_multiple_has_no_empty_last_chunk_and_an_empty_file_no_chunk() {
        let bytes = vec![7u8; 64 * 1024];
        let scanned = ChunkedFile::scan_reader(&bytes[..], 32 * 1024).expect("scan");
        assert_eq!(scanned.chunks.len(), 2);
        assert_eq!(scanned.chunks[0], scanned.chunks[1]);
        assert_eq!(scanned.unique_chunks().len(), 1);
        let empty = ChunkedFile::scan_reader(&[][..], 32 * 1024).expect("scan");
        assert_eq!((empty.size, empty.chunks.len()), (0, 0));
        assert_eq!(empty.sha256, sha256_hex(b""));
    }

    #[test]
    fn one_changed_page_changes_only_its_chunk() {
        let mut bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let before = ChunkedFile::scan_reader(&bytes[..], 32 * 1024).expect("scan");
        bytes[5 * 4096 * 9] ^= 1;
        let after = ChunkedFile::scan_reader(&bytes[..], 32 * 1024).expect("scan");
        let changed: Vec<usize> = (0..before.chunks.len())
            .filter(|&i| before.chunks[i] != after.chunks[i])
            .collect();
        assert_eq!(changed, [5]);
    }

    #[test]
    fn hashing_bytes_in_memory_equals_scanning_them() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 13 % 251) as u8).collect();
        let scanned = ChunkedFile::scan_reader(&bytes[..], chunk_size_for(200_000)).expect("scan");
        assert_eq!(ChunkedFile::of_bytes(&bytes), scanned);
        assert_eq!(ChunkedFile::of_bytes(&[]).chunks.len(), 0);
    }
}
