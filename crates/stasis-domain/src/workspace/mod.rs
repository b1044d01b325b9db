//! A workspace's tree manifest: the rules shared by the client that scans a
//! folder and the server that stores its versions.
//!
//! A manifest lists every entry of a folder (directories, empty ones too;
//! regular files with their executable bit, size, sha256 and content-defined
//! chunks; symlinks with their target, never followed), sorted by path, and
//! records the chunking parameters it was cut with, so that the next version
//! is cut the same way and keeps deduplicating.
//!
//! - [`TreeManifest::check`] refuses a manifest received from outside that
//!   breaks the rules (sorted unique paths, no `..`, no entry under a file or
//!   a symlink, sizes equal to their chunks, the limits), with the crate's
//!   [`DomainError`]: 400 `invalid_workspace_manifest`, or 413
//!   `workspace_too_large`.
//! - [`root_hash`] defines the tree's identity: one sha256 over its sorted
//!   entries (see that module for the exact bytes).
//! - [`pages`] splits a manifest into pages of bounded encoded size (a tree of
//!   100,000 files does not fit one Durable Object row), and rebuilds and
//!   checks it from them.
//!
//! No I/O and no chunker here: the client runs the chunker (fastcdc) and
//! walks the folder; this module only states what a valid manifest is.
//!
//! ```
//! use stasis_domain::workspace::{ChunkParams, ContentHash, Entry, TreeLimits, TreeManifest};
//!
//! let hello = b"hello\n";
//! let manifest = TreeManifest::new(
//!     ChunkParams::default(),
//!     vec![
//!         Entry::dir(b"src".to_vec()),
//!         Entry::file(b"src/hello.txt".to_vec(), false, hello.len() as u64,
//!             ContentHash::of(hello), vec![(ContentHash::of(hello), 6)]),
//!         Entry::symlink(b"latest".to_vec(), b"src/hello.txt".to_vec()),
//!     ],
//! );
//! let summary = manifest.check(&TreeLimits::default())?;
//! assert_eq!((summary.files, summary.total_size), (1, 6));
//! assert_eq!(summary.root_hash, manifest.root_hash());
//! # Ok::<(), stasis_domain::DomainError>(())
//! ```

mod checker;
mod entry;
mod hash;
mod manifest;
pub mod pages;
mod params;
mod path;
pub mod root_hash;

pub use checker::{TreeChecker, TreeSummary};
pub use entry::{ChunkRef, Entry, FileNode, Node};
pub use hash::{ContentHash, ContentHasher, NotAHash};
pub use manifest::TreeManifest;
pub use params::{ChunkParams, FASTCDC_2020, MAX_CHUNK_MAX, MIN_CHUNK_MIN};
pub use path::EntryPath;

use crate::DomainError;

/// The manifest format this code writes and reads.
pub const FORMAT: u32 = 1;
/// A path's length in bytes.
pub const MAX_PATH_BYTES: usize = 4096;
/// One path component's length in bytes (what Linux file systems allow).
pub const MAX_NAME_BYTES: usize = 255;
/// A symlink target's length in bytes (Linux's `PATH_MAX`).
pub const MAX_LINK_TARGET_BYTES: usize = 4096;
/// The largest workspace unless configured otherwise (4 GiB of file bytes).
pub const DEFAULT_WORKSPACE_LIMIT: u64 = 4 << 30;
/// The most entries unless configured otherwise: ten times the 100,000 files
/// the contract promises.
pub const DEFAULT_MAX_ENTRIES: u64 = 1_000_000;
/// The most chunk references (over all files) unless configured otherwise:
/// 4 GiB in 64 KiB chunks is 65,536, plus one per small file.
pub const DEFAULT_MAX_CHUNK_REFS: u64 = 2_000_000;
/// The code of a manifest that breaks the rules (400).
pub const INVALID_MANIFEST: &str = "invalid_workspace_manifest";
/// The code of a workspace over its limits (413).
pub const TOO_LARGE: &str = "workspace_too_large";

/// The limits a manifest is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeLimits {
    /// Bytes in all files together.
    pub max_total_size: u64,
    /// Entries of every kind.
    pub max_entries: u64,
    /// Chunk references over all files (a chunk named twice counts twice).
    pub max_chunk_refs: u64,
}

impl Default for TreeLimits {
    fn default() -> Self {
        Self {
            max_total_size: DEFAULT_WORKSPACE_LIMIT,
            max_entries: DEFAULT_MAX_ENTRIES,
            max_chunk_refs: DEFAULT_MAX_CHUNK_REFS,
        }
    }
}

/// A 400 `invalid_workspace_manifest`.
fn invalid(message: impl Into<String>) -> DomainError {
    DomainError::invalid(INVALID_MANIFEST, message)
}

/// A 413 `workspace_too_large`.
fn too_large(message: impl Into<String>, limit: u64) -> DomainError {
    DomainError::too_large(TOO_LARGE, message, limit)
}
