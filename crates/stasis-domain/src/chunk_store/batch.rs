//! Many chunks in one request: a batch upload runs the one-chunk saga
//! ([`super::saga::put_chunk`]) over all its chunks at once (every chunk
//! verified before anything is claimed, one claim call, the keys written
//! together, one record call), and a batch read checks the rows of all its
//! chunks in one call before reading any key. A crash therefore leaves
//! what a one-chunk upload's would: claims a later upload takes over, or
//! keys a sweep removes.

use super::{
    claims::Claim,
    digest::SHA256_MISMATCH,
    keys::chunk_key,
    operations as op,
    ports::{BlobStore, ChunkObject, fetch_visible},
    saga::{self, Upload, check_chunk},
};
use crate::DomainError;
use std::collections::HashSet;

/// One chunk of a batch upload: its name (hex sha256) and bytes.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// The name the bytes must hash to.
    pub name: &'a str,
    /// The chunk.
    pub bytes: &'a [u8],
}

/// What a batch upload did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stored {
    /// Distinct chunks in the batch.
    pub chunks: usize,
    /// Of those, the ones the store lacked and now holds.
    pub fresh: usize,
}

/// Stores every frame: all must hash to their names (else nothing is
/// claimed or written), then claim → write the keys → record, as one
/// chunk's upload does.
pub async fn put_chunks(
    object: &impl ChunkObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    frames: &[Frame<'_>],
    upload: Upload,
) -> Result<Stored, DomainError> {
    for frame in frames {
        let actual = blobs.sha256_hex(frame.bytes).await;
        if actual != frame.name {
            return Err(DomainError::invalid(
                SHA256_MISMATCH,
                format!(
                    "a frame of {} bytes hashes to {actual}, not to its name {}; nothing was stored",
                    frame.bytes.len(),
                    frame.name
                ),
            ));
        }
    }
    let mut seen = HashSet::new();
    let distinct: Vec<&Frame<'_>> = frames.iter().filter(|f| seen.insert(f.name)).collect();
    if distinct.is_empty() {
        return Ok(Stored::default());
    }
    let names = distinct.iter().map(|f| f.name.to_owned()).collect();
    let claims = saga::claim(object, blobs, names, upload).await?;
    let mut values = Vec::new();
    let mut written = Vec::new();
    for (frame, claim) in distinct.iter().zip(&claims) {
        if *claim == Claim::Write {
            values.push((chunk_key(key_prefix, frame.name), frame.bytes.to_vec()));
            let size = u64::try_from(frame.bytes.len()).unwrap_or(u64::MAX);
            written.push((frame.name.to_owned(), size));
        }
    }
    if written.is_empty() {
        return Ok(Stored {
            chunks: distinct.len(),
            fresh: 0,
        });
    }
    blobs.put_many(values).await?;
    let fresh = saga::record(object, written, upload).await?;
    Ok(Stored {
        chunks: distinct.len(),
        fresh: fresh.iter().filter(|new| **new).count(),
    })
}

/// The recorded size of each of `names` the store holds, `None` where it
/// lacks one; changes nothing.
pub async fn sizes(
    object: &impl ChunkObject,
    names: Vec<String>,
) -> Result<Vec<Option<u64>>, DomainError> {
    object.run_chunk(op::stored_sizes(names)).await
}

/// One chunk's bytes for a batch read whose rows [`sizes`] found:
/// retried while KV does not show them yet, verified against the name.
pub async fn read_held(
    blobs: &impl BlobStore,
    key_prefix: &str,
    name: &str,
) -> Result<Vec<u8>, DomainError> {
    let bytes = fetch_visible(blobs, &chunk_key(key_prefix, name)).await?;
    check_chunk(name, &blobs.sha256_hex(&bytes).await, bytes.len())?;
    Ok(bytes)
}
