//! A kilo.db snapshot: [`push`] (a consistent copy, split into chunks, only the chunks the
//! server lacks sent) and [`pull`] (the chunks taken from a local [`ChunkCache`] or fetched in
//! parallel, verified, written atomically). Both fall back to the whole file against a server
//! without the chunk routes.

mod cache;
mod chunked_pull;
mod chunks;
mod delta_push;
mod image;
mod landing;
mod manifest;
mod options;
mod ordered_hash;
pub(crate) mod parallel;
mod pull;
mod pull_outcome;
mod push;
mod push_receipt;
mod transfer;
mod whole_file_pull;

use std::fs::File;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::http;

pub use cache::{CACHE_DIR_ENV, CacheRead, ChunkCache, DEFAULT_CACHE_BYTES};
pub use chunks::{ChunkedFile, chunk_size_for};
pub use image::{CopyBytes, Image, LocalCopy};
pub use landing::quick_check;
pub use options::{PullOptions, PushOptions};
pub use pull::pull;
pub use pull_outcome::{PullOutcome, PulledSnapshot};
pub use push::{SMALL_SNAPSHOT_BYTES, push, upload_file, upload_image, upload_whole_file};
pub use push_receipt::PushReceipt;
pub use transfer::{PullTransfer, PushTransfer, TransferMode};

/// The hex sha256 and size of a file, read in chunks.
pub fn hash_file(path: &Path) -> Result<(String, u64)> {
    let context = || format!("hashing {}", path.display());
    let mut file = File::open(path).map_err(|e| Error::io(context(), e))?;
    let mut hasher = Sha256::new();
    let size = io::copy(&mut file, &mut hasher).map_err(|e| Error::io(context(), e))?;
    Ok((hex::encode(hasher.finalize()), size))
}

/// The hash a response announces: `X-Stasis-Sha256`, else the `ETag` without its quotes.
fn announced_sha256(response: &ureq::http::Response<ureq::Body>) -> Option<&str> {
    http::header(response, "x-stasis-sha256").or_else(|| {
        http::header(response, "etag").map(|etag| etag.trim_start_matches("W/").trim_matches('"'))
    })
}

/// A header parsed as an integer.
fn header_u64(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<u64> {
    http::header(response, name).and_then(|v| v.trim().parse().ok())
}

fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `"<etag>"`, whether or not `etag` came with its quotes.
fn quote_etag(etag: &str) -> String {
    let bare = etag.trim().trim_matches('"');
    format!("\"{bare}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags_are_quoted_once() {
        assert_eq!(quote_etag("abc"), "\"abc\"");
        assert_eq!(quote_etag("\"abc\""), "\"abc\"");
    }

    #[test]
    fn only_64_hex_digits_are_a_sha256() {
        assert!(is_sha256_hex(&"a".repeat(64)));
        assert!(!is_sha256_hex(&"a".repeat(63)));
        assert!(!is_sha256_hex(&"g".repeat(64)));
    }
}
