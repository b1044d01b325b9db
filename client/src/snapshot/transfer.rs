//! What a push or a pull moved over the wire, for its output and the benchmark.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

/// How the bytes moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferMode {
    /// The delta protocol: only the chunks the other side lacked.
    Chunks,
    /// The whole file in one request (a server without the chunk routes, or asked for).
    WholeFile,
}

/// What a push sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushTransfer {
    /// How.
    pub mode: TransferMode,
    /// Chunks in the snapshot (0 for a whole-file push).
    pub chunks_total: u64,
    /// Chunks uploaded (a chunk uploaded twice counts twice).
    pub chunks_sent: u64,
    /// Snapshot bytes uploaded: the chunks' bytes, or the whole file.
    pub bytes_sent: u64,
    /// Request bodies in all, the JSON of `missing` and the manifest included.
    pub body_bytes_sent: u64,
}

/// What a pull fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullTransfer {
    /// How.
    pub mode: TransferMode,
    /// Chunks in the snapshot (0 for a whole-file pull).
    pub chunks_total: u64,
    /// Distinct chunks taken from the local cache.
    pub chunks_cached: u64,
    /// Distinct chunks downloaded.
    pub chunks_fetched: u64,
    /// Snapshot bytes downloaded.
    pub bytes_fetched: u64,
    /// Cache entries that no longer matched their hash: removed, and fetched instead.
    pub cache_rejected: u64,
}

impl PushTransfer {
    /// `sent 6 of 763 chunks (196608 bytes)`, or `sent the whole file (N bytes)`.
    pub fn summary(&self) -> String {
        match self.mode {
            TransferMode::Chunks => format!(
                "sent {} of {} chunks ({} bytes)",
                self.chunks_sent, self.chunks_total, self.bytes_sent
            ),
            TransferMode::WholeFile => format!("sent the whole file ({} bytes)", self.bytes_sent),
        }
    }
}

impl PullTransfer {
    /// `fetched 6 of 763 chunks (196608 bytes), 757 from the cache`, or the whole file.
    pub fn summary(&self) -> String {
        match self.mode {
            TransferMode::Chunks => {
                let mut text = format!(
                    "fetched {} of {} chunks ({} bytes), {} from the cache",
                    self.chunks_fetched, self.chunks_total, self.bytes_fetched, self.chunks_cached
                );
                if self.cache_rejected > 0 {
                    text.push_str(&format!(
                        ", {} cache entries rejected (corrupt)",
                        self.cache_rejected
                    ));
                }
                text
            }
            TransferMode::WholeFile => {
                format!("fetched the whole file ({} bytes)", self.bytes_fetched)
            }
        }
    }
}

/// Counters shared by the threads of one transfer.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub chunks: AtomicU64,
    pub bytes: AtomicU64,
    pub cached: AtomicU64,
    pub rejected: AtomicU64,
    pub body_bytes: AtomicU64,
}

impl Counters {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
