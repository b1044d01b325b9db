//! The framing of a chunk batch (`/workspace/batch/*`), both ways: a
//! frame is the chunk's sha256 (32 raw bytes), its length (4 bytes,
//! big-endian) and its bytes; a body is frames back to back.
//!
//! A batch holds at most [`MAX_BATCH_CHUNKS`] chunks and
//! [`BATCH_BODY_LIMIT`] bytes, frames included, so that on the edge one
//! request stays within the Workers limits: one KV operation per chunk and
//! a few object calls (under the 1,000 operations an invocation may make),
//! and a body far under the request limit and the 128 MB of memory.

use super::digest::ChunkHash;
use crate::DomainError;

/// The most bytes a batch's body (either way) holds, frames included.
pub const BATCH_BODY_LIMIT: u64 = 8 * 1024 * 1024;
/// The most chunks one batch names.
pub const MAX_BATCH_CHUNKS: usize = 256;
/// A frame's bytes before its chunk: the sha256 and the length.
pub const FRAME_HEADER: usize = 32 + 4;
/// The code of a body that is not a sequence of whole frames.
pub const INVALID_BATCH: &str = "invalid_batch";
/// The code of a batch past [`MAX_BATCH_CHUNKS`] or [`BATCH_BODY_LIMIT`].
pub const BATCH_TOO_LARGE: &str = "batch_too_large";

/// Appends one frame to `out`.
pub fn encode_frame(out: &mut Vec<u8>, name: &ChunkHash, chunk: &[u8]) {
    out.extend_from_slice(name);
    let len = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(chunk);
}

/// The frames of `body`, each its name and bytes, in order: 400
/// [`INVALID_BATCH`] for a frame cut short, 413 [`BATCH_TOO_LARGE`] past
/// [`MAX_BATCH_CHUNKS`] frames.
pub fn decode_frames(body: &[u8]) -> Result<Vec<(ChunkHash, &[u8])>, DomainError> {
    let mut frames = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        if frames.len() == MAX_BATCH_CHUNKS {
            return Err(too_large(format!(
                "a batch holds at most {MAX_BATCH_CHUNKS} chunks"
            )));
        }
        let offset = body.len() - rest.len();
        let Some((head, after)) = rest.split_at_checked(FRAME_HEADER) else {
            return Err(DomainError::invalid(
                INVALID_BATCH,
                format!(
                    "the frame at byte {offset} is cut short: {} bytes left, a frame header is \
                     {FRAME_HEADER}",
                    rest.len()
                ),
            ));
        };
        let (name, len) = head.split_at(32);
        let name = ChunkHash::try_from(name).unwrap_or([0; 32]);
        let len = u32::from_be_bytes(<[u8; 4]>::try_from(len).unwrap_or([0xff; 4]));
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let Some((chunk, after)) = after.split_at_checked(len) else {
            return Err(DomainError::invalid(
                INVALID_BATCH,
                format!(
                    "the frame at byte {offset} announces {len} bytes; {} follow",
                    after.len()
                ),
            ));
        };
        frames.push((name, chunk));
        rest = after;
    }
    Ok(frames)
}

/// The 413 of a batch past its limits.
pub fn too_large(message: String) -> DomainError {
    DomainError::too_large(BATCH_TOO_LARGE, message, BATCH_BODY_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_cut_frame_is_refused() {
        let mut body = Vec::new();
        encode_frame(&mut body, &[1; 32], b"one");
        encode_frame(&mut body, &[2; 32], b"");
        let frames = decode_frames(&body).expect("decodes");
        assert_eq!(frames, vec![([1; 32], &b"one"[..]), ([2; 32], &b""[..])]);
        for cut in [1, 20, FRAME_HEADER + 1, body.len() - 1] {
            // Every cut leaves a frame short (none falls between frames).
            let refused = decode_frames(&body[..cut]).map_err(|e| e.code().to_owned());
            assert_eq!(
                refused.err().as_deref(),
                Some(INVALID_BATCH),
                "cut at {cut}"
            );
        }
        let mut many = Vec::new();
        for _ in 0..=MAX_BATCH_CHUNKS {
            encode_frame(&mut many, &[3; 32], b"x");
        }
        let refused = decode_frames(&many).map_err(|e| e.code().to_owned());
        assert_eq!(refused.err().as_deref(), Some(BATCH_TOO_LARGE));
    }
}
