//! The snapshot's bytes as base64, read chunk by chunk through the
//! whole-file reader (each chunk and the whole file verified, range by
//! range where the runtime has a per-invocation budget) and encoded a
//! slice at a time, so that neither the bytes nor the encoded text (a third
//! larger) is ever held whole. This is the one place that knows how a
//! manifest carries a snapshot's bytes.

use crate::error::ApiError;
use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use futures::{Stream, StreamExt as _};

/// Bytes encoded per slice: a multiple of 3, so that only the last slice
/// carries padding and the slices join into one base64 text.
const SLICE_BYTES: usize = 3 * 64 * 1024;

/// `pieces` (the snapshot's verified bytes) as base64 text, slice by
/// slice; an error (a chunk that fails its sha256) cuts the export.
pub(super) fn encoded(
    pieces: impl Stream<Item = Result<Bytes, ApiError>>,
) -> impl Stream<Item = Result<Bytes, ApiError>> {
    let pieces = Box::pin(pieces);
    futures::stream::try_unfold(
        (pieces, Vec::new(), false),
        |(mut pieces, mut carry, mut finished)| async move {
            while !finished && carry.len() < SLICE_BYTES {
                match pieces.next().await {
                    Some(piece) => carry.extend_from_slice(&piece?),
                    None => finished = true,
                }
            }
            if carry.is_empty() {
                return Ok(None);
            }
            let take = carry.len().min(SLICE_BYTES);
            let text = Bytes::from(STANDARD.encode(&carry[..take]));
            carry.drain(..take);
            Ok(Some((text, (pieces, carry, finished))))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;

    #[test]
    fn slices_join_into_the_base64_of_the_whole() {
        let bytes: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let pieces = bytes
            .chunks(70_001)
            .map(|piece| Ok(Bytes::copy_from_slice(piece)))
            .collect::<Vec<_>>();
        let slices: Vec<Result<Bytes, ApiError>> =
            block_on(encoded(futures::stream::iter(pieces)).collect());
        let text: Vec<u8> = slices
            .into_iter()
            .flat_map(|s| s.unwrap_or_default())
            .collect();
        assert_eq!(text, STANDARD.encode(&bytes).into_bytes());
    }
}
