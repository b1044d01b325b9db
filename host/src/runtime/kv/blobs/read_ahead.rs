//! A whole-file read of the KV folder's chunks, read and verified ahead of
//! the piece being sent. Verifying is the GET's main cost (a sha256 per
//! byte, ~12 ms for 24 MiB with SHA extensions), so each batch of chunks is
//! verified on two threads, its halves by bytes apart.

use super::{HostBlobs, kv_error};
use bytes::Bytes;
use futures::Stream;
use stasis_domain::{
    DomainError,
    snapshot::{chunk_key, chunk_saga, sha256_hex, whole},
};

/// The least a piece sent gathers: small chunks (a client's, 32 KiB) go
/// out together, one wake-up each rather than one per chunk.
const PIECE_BYTES: usize = 1024 * 1024;

/// A batch holds at least two chunks, and chunks up to this many bytes, so
/// that both verifying threads have work.
const BATCH_BYTES: usize = 2 * PIECE_BYTES;

/// Verified pieces waiting to be sent, at most, besides the batch being
/// read.
const READ_AHEAD: usize = 2;

/// A chunk read and whether its bytes are still to be checked against its
/// name (a chunk the folder lacked came through the domain's path, which
/// checked it).
struct Read {
    name: String,
    bytes: Vec<u8>,
    unchecked: bool,
}

impl HostBlobs {
    /// `chunks`' bytes, each verified against its name, in order: read on
    /// a blocking thread a batch ahead of the piece being sent. The thread
    /// stops at the first failure (after the pieces verified before it),
    /// or when the stream is dropped.
    pub fn read_ahead(
        self,
        key_prefix: String,
        chunks: Vec<String>,
    ) -> impl Stream<Item = Result<Bytes, DomainError>> {
        let (sender, receiver) = tokio::sync::mpsc::channel(READ_AHEAD);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            let mut names = chunks.into_iter().peekable();
            while names.peek().is_some() {
                let (verified, failure) = self.next_batch(&runtime, &key_prefix, &mut names);
                for piece in gather(verified) {
                    if sender.blocking_send(Ok(piece)).is_err() {
                        return;
                    }
                }
                if let Some(err) = failure {
                    let _ = sender.blocking_send(Err(err));
                    return;
                }
            }
        });
        futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|read| (read, receiver))
        })
    }

    /// Reads the next batch and verifies it: the chunks verified, in
    /// order, up to the first failure, which comes second.
    fn next_batch(
        &self,
        runtime: &tokio::runtime::Handle,
        key_prefix: &str,
        names: &mut impl Iterator<Item = String>,
    ) -> (Vec<Vec<u8>>, Option<DomainError>) {
        let mut batch = Vec::new();
        let mut bytes = 0;
        while batch.len() < 2 || bytes < BATCH_BYTES {
            let Some(name) = names.next() else { break };
            match self.read_here(runtime, key_prefix, name) {
                Ok(read) => {
                    bytes += read.bytes.len();
                    batch.push(read);
                }
                // The chunks read before it are verified and sent first.
                Err(err) => return verified_until(batch, Some(err)),
            }
        }
        verified_until(batch, None)
    }

    /// One chunk's bytes from the folder, read on this (blocking) thread:
    /// handing each read to another thread cost a pull of 767 chunks more
    /// in wake-ups than in reading. A chunk the folder lacks takes the
    /// domain's path, which answers what is missing.
    fn read_here(
        &self,
        runtime: &tokio::runtime::Handle,
        key_prefix: &str,
        name: String,
    ) -> Result<Read, DomainError> {
        let key = chunk_key(key_prefix, &name);
        match self.kv.get(&self.bucket, &key).map_err(kv_error)? {
            Some(bytes) => Ok(Read {
                name,
                bytes,
                unchecked: true,
            }),
            None => runtime
                .block_on(whole::read_chunk(self, key_prefix, &name))
                .map(|bytes| Read {
                    name,
                    bytes,
                    unchecked: false,
                }),
        }
    }
}

/// Checks `batch`'s chunks on two threads (the second half of its bytes
/// on a scoped one); returns their bytes up to the first that fails, and
/// that failure, or else `failure`.
fn verified_until(
    batch: Vec<Read>,
    failure: Option<DomainError>,
) -> (Vec<Vec<u8>>, Option<DomainError>) {
    let total: usize = batch.iter().map(|read| read.bytes.len()).sum();
    let mut seen = 0;
    let split = batch
        .iter()
        .position(|read| {
            seen += read.bytes.len();
            seen > total / 2
        })
        .map_or(batch.len(), |last_of_first| last_of_first + 1);
    let (first_half, second_half) = batch.split_at(split);
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| check_all(second_half));
        // A thread that could not finish: check its half here instead.
        let first = check_all(first_half);
        (
            first,
            second.join().unwrap_or_else(|_| check_all(second_half)),
        )
    });
    let checks = first.into_iter().chain(second);
    let mut verified = Vec::with_capacity(batch.len());
    for (read, check) in batch.into_iter().zip(checks) {
        if let Err(err) = check {
            return (verified, Some(err));
        }
        verified.push(read.bytes);
    }
    (verified, failure)
}

fn check_all(reads: &[Read]) -> Vec<Result<(), DomainError>> {
    reads
        .iter()
        .map(|read| {
            if read.unchecked {
                chunk_saga::check_chunk(&read.name, &sha256_hex(&read.bytes), read.bytes.len())
            } else {
                Ok(())
            }
        })
        .collect()
}

/// `chunks` as pieces to send: a chunk of at least [`PIECE_BYTES`] alone,
/// smaller ones gathered up to that size.
fn gather(chunks: Vec<Vec<u8>>) -> Vec<Bytes> {
    let mut pieces = Vec::new();
    let mut piece: Vec<u8> = Vec::new();
    for chunk in chunks {
        if piece.is_empty() && chunk.len() >= PIECE_BYTES {
            pieces.push(Bytes::from(chunk));
            continue;
        }
        piece.extend_from_slice(&chunk);
        if piece.len() >= PIECE_BYTES {
            pieces.push(Bytes::from(std::mem::take(&mut piece)));
        }
    }
    if !piece.is_empty() {
        pieces.push(Bytes::from(piece));
    }
    pieces
}
