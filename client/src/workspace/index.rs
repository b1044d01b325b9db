//! The local index: what each file held when it was last read, keyed by its path and
//! [`FileStamp`], so that a file whose stamp has not moved is not read again.
//!
//! A stamp can be trusted because every read waited out its file's timestamp tick (see
//! [`super::consistent_read`]): any later write moves mtime or ctime. The index is a cache: a
//! missing or unreadable one, or one cut with other chunking parameters, costs a full read and
//! nothing else. It is written atomically (the old index or the new, never a part) after a
//! scan succeeds.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Deserialize, Serialize};
use stasis_domain::workspace::{ChunkParams, ChunkRef, ContentHash};

use super::error::{WorkspaceError, WorkspaceResult};
use super::stamp::FileStamp;
use crate::atomic_write::AtomicFile;

/// The index file's format.
const INDEX_FORMAT: u32 = 1;

/// What a file held at a stamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// The index as stored: its chunking, so that a change of parameters discards it.
#[derive(Serialize, Deserialize)]
struct IndexFile {
    format: u32,
    chunking: ChunkParams,
    files: Vec<StoredRecord>,
}

#[derive(Serialize, Deserialize)]
struct StoredRecord {
    /// The path's bytes in base64 (names need not be UTF-8).
    path: String,
    #[serde(flatten)]
    record: IndexRecord,
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
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(None),
            Err(err) => return Err(Some(format!("{}: {err}", path.display()))),
        };
        let stored: IndexFile = serde_json::from_reader(BufReader::new(file))
            .map_err(|err| Some(format!("{}: {err}", path.display())))?;
        if stored.format != INDEX_FORMAT || &stored.chunking != chunking {
            return Err(Some(format!(
                "{} was made with another format or chunking",
                path.display()
            )));
        }
        let mut files = HashMap::with_capacity(stored.files.len());
        for entry in stored.files {
            let key = STANDARD
                .decode(&entry.path)
                .map_err(|err| Some(format!("{}: {err}", path.display())))?;
            files.insert(key, entry.record);
        }
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
            .map(|(rel, record)| StoredRecord {
                path: STANDARD.encode(rel),
                record: record.clone(),
            })
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let stored = IndexFile {
            format: INDEX_FORMAT,
            chunking: chunking.clone(),
            files,
        };
        let context = || format!("writing the workspace index {}", path.display());
        let mut file = AtomicFile::create(path).map_err(from_client)?;
        let mut out = BufWriter::new(file.file());
        serde_json::to_writer(&mut out, &stored)
            .map_err(|e| WorkspaceError::io(context(), e.into()))?;
        out.flush().map_err(|e| WorkspaceError::io(context(), e))?;
        drop(out);
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
