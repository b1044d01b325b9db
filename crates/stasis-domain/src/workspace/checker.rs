//! The rules of a tree manifest, checked one entry at a time, so that a
//! manifest arriving in pages is checked without holding it whole.

use super::root_hash::RootHasher;
use super::{ChunkParams, ChunkRef, ContentHash, Entry, EntryPath, Node, TreeLimits};
use super::{MAX_LINK_TARGET_BYTES, invalid, too_large};
use crate::DomainError;
use std::collections::HashSet;

/// What a checked manifest holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeSummary {
    /// Entries of every kind.
    pub entries: u64,
    /// Regular files.
    pub files: u64,
    /// Directories.
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Bytes in all files.
    pub total_size: u64,
    /// Chunk references over all files (a chunk named twice counts twice).
    pub chunk_refs: u64,
    /// The tree's root hash ([`super::root_hash`]).
    pub root_hash: ContentHash,
}

/// The file whose chunk list may still continue (in the next page).
struct OpenFile {
    path: EntryPath,
    size: u64,
    sha256: ContentHash,
    chunked: u64,
    chunk_count: u64,
    first_chunk: Option<ContentHash>,
}

/// Checks a manifest's entries as they come, in order: paths relative, plain
/// and sorted without repeats; every entry's folder listed before it as a
/// directory (so nothing lies under a file or a symlink); a file's size the
/// sum of its chunks, each chunk within the chunking's `max_size`; symlink
/// targets of 1 to 4,096 bytes without NUL; the limits.
pub struct TreeChecker {
    limits: TreeLimits,
    max_chunk: u32,
    previous: Option<EntryPath>,
    dirs: HashSet<Vec<u8>>,
    open_file: Option<OpenFile>,
    root: RootHasher,
    summary: TreeSummary,
}

impl TreeChecker {
    /// Starts checking a manifest cut with `chunking`.
    pub fn new(chunking: &ChunkParams, limits: TreeLimits) -> Result<Self, DomainError> {
        if let Some(problem) = chunking.problem() {
            return Err(invalid(problem));
        }
        Ok(Self {
            limits,
            max_chunk: chunking.max_size,
            previous: None,
            dirs: HashSet::new(),
            open_file: None,
            root: RootHasher::default(),
            summary: TreeSummary {
                entries: 0,
                files: 0,
                dirs: 0,
                symlinks: 0,
                total_size: 0,
                chunk_refs: 0,
                root_hash: ContentHash::from_raw([0; 32]),
            },
        })
    }

    /// Checks the next entry.
    pub fn entry(&mut self, entry: &Entry) -> Result<(), DomainError> {
        self.close_file()?;
        self.check_place(&entry.path)?;
        self.summary.entries += 1;
        if self.summary.entries > self.limits.max_entries {
            let limit = self.limits.max_entries;
            return Err(too_large(
                format!("a workspace holds at most {limit} entries"),
                limit,
            ));
        }
        match &entry.node {
            Node::Dir => {
                self.summary.dirs += 1;
                self.dirs.insert(entry.path.as_bytes().to_vec());
            }
            Node::Symlink { target } => {
                self.summary.symlinks += 1;
                if target.is_empty() || target.len() > MAX_LINK_TARGET_BYTES || target.contains(&0)
                {
                    return Err(invalid(format!(
                        "the symlink {} needs a target of 1 to {MAX_LINK_TARGET_BYTES} bytes without NUL",
                        entry.path
                    )));
                }
            }
            Node::File(file) => {
                self.summary.files += 1;
                self.add_size(file.size)?;
                self.open_file = Some(OpenFile {
                    path: entry.path.clone(),
                    size: file.size,
                    sha256: file.sha256,
                    chunked: 0,
                    chunk_count: 0,
                    first_chunk: None,
                });
                self.more_chunks(&entry.path, &file.chunks)?;
            }
        }
        self.root.add(entry);
        self.previous = Some(entry.path.clone());
        Ok(())
    }

    /// Checks more chunks of the file just checked (a page's continuation).
    pub fn more_chunks(
        &mut self,
        path: &EntryPath,
        chunks: &[ChunkRef],
    ) -> Result<(), DomainError> {
        let max_chunk = self.max_chunk;
        let Some(file) = self.open_file.as_mut().filter(|file| &file.path == path) else {
            return Err(invalid(format!(
                "chunks of {path} follow something other than that file"
            )));
        };
        for chunk in chunks {
            if chunk.size == 0 || chunk.size > max_chunk {
                return Err(invalid(format!(
                    "a chunk of {path} holds {} bytes; chunks hold 1 to {max_chunk}",
                    chunk.size
                )));
            }
            file.chunked = file.chunked.saturating_add(u64::from(chunk.size));
            file.first_chunk.get_or_insert(chunk.sha256);
        }
        let count = u64::try_from(chunks.len()).unwrap_or(u64::MAX);
        file.chunk_count = file.chunk_count.saturating_add(count);
        self.summary.chunk_refs = self.summary.chunk_refs.saturating_add(count);
        if self.summary.chunk_refs > self.limits.max_chunk_refs {
            let limit = self.limits.max_chunk_refs;
            return Err(too_large(
                format!("a workspace names at most {limit} chunks"),
                limit,
            ));
        }
        Ok(())
    }

    /// Ends the check: the summary with the root hash.
    pub fn finish(mut self) -> Result<TreeSummary, DomainError> {
        self.close_file()?;
        self.summary.root_hash = self.root.finish();
        Ok(self.summary)
    }

    fn check_place(&self, path: &EntryPath) -> Result<(), DomainError> {
        if let Some(problem) = path.problem() {
            return Err(invalid(problem));
        }
        if self
            .previous
            .as_ref()
            .is_some_and(|previous| previous >= path)
        {
            return Err(invalid(format!(
                "{path} is out of order or repeated: entries are sorted by their path's bytes, once each"
            )));
        }
        match path.parent() {
            Some(parent) if !self.dirs.contains(parent) => Err(invalid(format!(
                "{path} is not inside a directory listed before it (nothing lies under a file or a symlink)"
            ))),
            _ => Ok(()),
        }
    }

    fn add_size(&mut self, size: u64) -> Result<(), DomainError> {
        let limit = self.limits.max_total_size;
        match self.summary.total_size.checked_add(size) {
            Some(total) if total <= limit => {
                self.summary.total_size = total;
                Ok(())
            }
            _ => Err(too_large(
                format!("a workspace holds at most {limit} bytes of files"),
                limit,
            )),
        }
    }

    fn close_file(&mut self) -> Result<(), DomainError> {
        let Some(file) = self.open_file.take() else {
            return Ok(());
        };
        if file.chunked != file.size {
            return Err(invalid(format!(
                "{} has {} bytes but its chunks hold {}",
                file.path, file.size, file.chunked
            )));
        }
        if file.size == 0 && file.sha256 != ContentHash::of(b"") {
            return Err(invalid(format!(
                "the empty file {} has another sha256",
                file.path
            )));
        }
        if file.chunk_count == 1 && file.first_chunk != Some(file.sha256) {
            return Err(invalid(format!(
                "{} is one chunk, yet the chunk's sha256 is not the file's",
                file.path
            )));
        }
        Ok(())
    }
}
