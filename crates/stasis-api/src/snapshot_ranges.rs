//! A whole-file download of many chunks, read range by range: a runtime
//! whose invocations have a KV budget (the edge: 1,000 operations) reads
//! each range of at most `stasis_domain::snapshot::ranges::RANGE_CHUNKS`
//! in a fresh invocation ([`crate::Snapshots::snapshot_range`]), while the
//! response streams. The bytes pass through the [`WholeReader`], which
//! checks the whole file's sha256 before the last piece goes out, so a
//! corrupt or short file cuts the response instead of completing it.

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use stasis_domain::{
    DomainError,
    chunk_store::{ports::BlobStore, saga::read_chunk},
    snapshot::whole::WholeReader,
};

/// `chunks`' bytes from `blobs`, each verified against its name, one item
/// per chunk, in order.
pub fn read_chunks<B: BlobStore>(
    blobs: B,
    key_prefix: String,
    chunks: Vec<String>,
) -> impl Stream<Item = Result<Bytes, DomainError>> {
    futures::stream::try_unfold(
        (blobs, key_prefix, chunks.into_iter()),
        |(blobs, key_prefix, mut names)| async move {
            let Some(name) = names.next() else {
                return Ok(None);
            };
            let bytes = read_chunk(&blobs, &key_prefix, &name).await?;
            Ok(Some((Bytes::from(bytes), (blobs, key_prefix, names))))
        },
    )
}

/// The chunks `reader` has left, read by `open_range` in ranges of at most
/// `per_range`, one range after the other; the last piece is held back
/// until the whole file checks out.
pub fn ranged<S, F>(
    mut reader: WholeReader,
    per_range: usize,
    open_range: F,
) -> impl Stream<Item = Result<Bytes, DomainError>>
where
    F: FnMut(Vec<String>) -> S,
    S: Stream<Item = Result<Bytes, DomainError>>,
{
    let planned = reader.take_ranges(per_range);
    let pieces = Box::pin(futures::stream::iter(planned).map(open_range).flatten());
    futures::stream::try_unfold(
        (pieces, reader, None::<Bytes>),
        |(mut pieces, mut reader, mut held)| async move {
            while let Some(piece) = pieces.next().await {
                let piece = piece?;
                reader.accept(&piece);
                if let Some(ready) = held.replace(piece) {
                    return Ok(Some((ready, (pieces, reader, held))));
                }
            }
            reader.finish()?;
            Ok(held.take().map(|last| (last, (pieces, reader, None))))
        },
    )
}

#[cfg(test)]
mod tests;
