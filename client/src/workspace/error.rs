//! What can go wrong scanning, reading back or restoring a workspace.

use std::path::PathBuf;

use stasis_domain::DomainError;
use stasis_domain::workspace::ContentHash;

/// A workspace operation's failure. Every variant names the file or chunk it concerns.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A local file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A file kept changing while it was read: it was never stored torn, but not stored at all.
    #[error(
        "{} kept changing while it was read ({attempts} attempts); save again once it is quiet",
        path.display()
    )]
    Unstable {
        /// The file.
        path: PathBuf,
        /// How many times it was read.
        attempts: u32,
    },

    /// A manifest breaks the rules (one scanned here, e.g. a path over 4,096 bytes, or one
    /// received).
    #[error("workspace manifest: {0}")]
    Manifest(#[from] DomainError),

    /// The manifest was cut with a chunker this client does not run.
    #[error("unsupported chunking: {0}")]
    UnsupportedChunking(String),

    /// An exclude or include pattern is not valid gitignore syntax.
    #[error("workspace pattern {pattern:?}: {detail}")]
    Pattern {
        /// The pattern given.
        pattern: String,
        /// Why it was refused.
        detail: String,
    },

    /// Bytes did not hash to what the manifest says (a chunk, a file, or the whole tree).
    #[error("{what}: sha256 mismatch: expected {expected}, got {actual}")]
    Integrity {
        /// Which chunk, file or tree.
        what: String,
        /// The hash the manifest gives.
        expected: ContentHash,
        /// The hash of the bytes seen.
        actual: ContentHash,
    },

    /// A restore's target already holds something: a restore never merges into it.
    #[error("{}: {detail}; a workspace restore never merges into existing files", path.display())]
    TargetNotEmpty {
        /// The target folder.
        path: PathBuf,
        /// What is there.
        detail: String,
    },

    /// A file no longer holds the bytes a scan found in it: scan again.
    #[error("{} changed since the scan (chunk {hash} is no longer at byte {offset})", path.display())]
    ChangedSinceScan {
        /// The file.
        path: PathBuf,
        /// The chunk looked for.
        hash: ContentHash,
        /// Where it was.
        offset: u64,
    },

    /// A chunk was asked of a scan that did not see it.
    #[error("chunk {0} is not part of this scan")]
    UnknownChunk(ContentHash),

    /// The caller's chunk fetcher failed.
    #[error("fetching chunk {hash}: {source}")]
    Fetch {
        /// The chunk.
        hash: ContentHash,
        /// The fetcher's error.
        #[source]
        source: Box<crate::Error>,
    },
}

impl WorkspaceError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// A workspace operation's result.
pub type WorkspaceResult<T> = Result<T, WorkspaceError>;
