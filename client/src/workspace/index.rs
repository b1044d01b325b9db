//! The local index: what each file held when it was last read, keyed by its path and
//! [`FileStamp`], so that a file whose stamp has not moved is not read again.
//!
//! A stamp can be trusted because every read waited out its file's timestamp tick (see
//! [`super::consistent_read`]): any later write moves mtime or ctime. The index is a cache: a
//! missing or unreadable one, or one cut with other chunking parameters, costs a full read and
//! nothing else. It is written atomically (the old index or the new, never a part) after a
//! scan succeeds, in postcard (a compact serde format): a tree of 20,000 files loads it in
//! about 20 ms, where its JSON took about 130 ms.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use stasis_domain::workspace::{ChunkParams, ChunkRef, ContentHash};

use super::error::{WorkspaceError, WorkspaceResult};
use super::stamp::FileStamp;
use crate::atomic_write::AtomicFile;

/// The first bytes of an index file: what went before (JSON, format 1) or anything else is
/// not read.
const INDEX_MAGIC: &[u8; 16] = b"stasis-index-v2\n";

/// What a file held at a stamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRecord {
    /// The file's stamp when it was read.
    pub stamp: FileStamp,
    /// The sha256 of its bytes.
    pub sha256: ContentHash,
    /// Its chunks.
    pub chunks: Vec<ChunkRef>,
}

/// Every file's record, by path relative to the workspace folder.
#[derive(Debug, Clone, Default)]
pub struct Index {
    files: HashMap<Vec<u8>, IndexRecord>,
}

/// The index as stored (after [`INDEX_MAGIC`]): its chunking, so that a change of parameters
/// discards it.
#[derive(Serialize, Deserialize)]
struct IndexFile {
    chunking: ChunkParams,
    files: Vec<StoredRecord>,
}

/// A record with its path's bytes and raw hashes (postcard is not self-describing: plain
/// fields only).
#[derive(Serialize, Deserialize)]
struct StoredRecord {
    path: Vec<u8>,
    stamp: FileStamp,
    sha256: [u8; 32],
    chunks: Vec<([u8; 32], u32)>,
}

impl StoredRecord {
    fn new(path: &[u8], record: &IndexRecord) -> Self {
        StoredRecord {
            path: path.to_vec(),
            stamp: record.stamp,
            sha256: *record.sha256.as_raw(),
            chunks: record
                .chunks
                .iter()
                .map(|chunk| (*chunk.sha256.as_raw(), chunk.size))
                .collect(),
        }
    }

    fn record(self) -> (Vec<u8>, IndexRecord) {
        let record = IndexRecord {
            stamp: self.stamp,
            sha256: ContentHash::from_raw(self.sha256),
            chunks: self
                .chunks
                .into_iter()
                .map(|(sha256, size)| ChunkRef {
                    sha256: ContentHash::from_raw(sha256),
                    size,
                })
                .collect(),
        };
        (self.path, record)
    }
}

impl Index {
    /// The index at `path` if it was made with `chunking`; else an empty one, and why.
    pub fn load(path: &Path, chunking: &ChunkParams) -> (Self, Option<String>) {
        match Self::read(path, chunking) {
            Ok(index) => (index, None),
            Err(why) => (Self::default(), why),
        }
    }

    fn read(path: &Path, chunking: &ChunkParams) -> Result<Self, Option<String>> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(None),
            Err(err) => return Err(Some(format!("{}: {err}", path.display()))),
        };
        let Some(body) = bytes.strip_prefix(INDEX_MAGIC) else {
            return Err(Some(format!("{} is of another format", path.display())));
        };
        let stored: IndexFile =
            postcard::from_bytes(body).map_err(|err| Some(format!("{}: {err}", path.display())))?;
        if &stored.chunking != chunking {
            return Err(Some(format!(
                "{} was made with another chunking",
                path.display()
            )));
        }
        let files = stored.files.into_iter().map(StoredRecord::record).collect();
        Ok(Self { files })
    }

    /// What the file at `rel` held, if its stamp is still `stamp`.
    pub fn lookup(&self, rel: &[u8], stamp: &FileStamp) -> Option<&IndexRecord> {
        self.files.get(rel).filter(|record| &record.stamp == stamp)
    }

    /// Records what the file at `rel` holds.
    pub fn insert(&mut self, rel: Vec<u8>, record: IndexRecord) {
        self.files.insert(rel, record);
    }

    /// How many files are recorded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is recorded.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Writes the index to `path` atomically.
    pub fn save(&self, path: &Path, chunking: &ChunkParams) -> WorkspaceResult<()> {
        let mut files: Vec<StoredRecord> = self
            .files
            .iter()
            .map(|(rel, record)| StoredRecord::new(rel, record))
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let stored = IndexFile {
            chunking: chunking.clone(),
            files,
        };
        let context = || format!("writing the workspace index {}", path.display());
        let bytes = postcard::to_extend(&stored, INDEX_MAGIC.to_vec())
            .map_err(|e| WorkspaceError::io(context(), std::io::Error::other(e)))?;
        let mut file = AtomicFile::create(path).map_err(from_client)?;
        file.file()
            .write_all(&bytes)
            .map_err(|e| WorkspaceError::io(context(), e))?;
        file.commit().map_err(from_client)
    }
}

/// The atomic writer's error as a workspace error.
fn from_client(err: crate::Error) -> WorkspaceError {
    match err {
        crate::Error::Io { context, source } => WorkspaceError::Io { context, source },
        other => WorkspaceError::io(other.to_string(), std::io::Error::other("atomic write")),
    }
}
