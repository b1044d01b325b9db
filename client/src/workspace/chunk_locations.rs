//! Where each chunk of a scan lies in the scanned files, so that an uploader reads a chunk's
//! bytes when it sends them and never holds a whole tree in memory.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use stasis_domain::workspace::{ChunkRef, ContentHash};

use super::error::{WorkspaceError, WorkspaceResult};

/// One place a chunk's bytes can be read from.
#[derive(Debug, Clone, Copy)]
struct Location {
    file: usize,
    offset: u64,
    size: u32,
}

/// Every chunk of a scan, with one file and offset that holds it.
#[derive(Debug, Clone, Default)]
pub struct ChunkLocations {
    files: Vec<PathBuf>,
    chunks: HashMap<ContentHash, Location>,
}

impl ChunkLocations {
    /// Records the chunks of the file at `path`, in order from its first byte.
    pub(crate) fn add_file(&mut self, path: PathBuf, chunks: &[ChunkRef]) {
        let file = self.files.len();
        self.files.push(path);
        let mut offset = 0u64;
        for chunk in chunks {
            let location = Location {
                file,
                offset,
                size: chunk.size,
            };
            self.chunks.entry(chunk.sha256).or_insert(location);
            offset += u64::from(chunk.size);
        }
    }

    /// How many distinct chunks are known.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// Whether no chunk is known.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Whether the scan saw the chunk.
    pub fn contains(&self, hash: &ContentHash) -> bool {
        self.chunks.contains_key(hash)
    }

    /// The file, offset and length a chunk is read from.
    pub fn location(&self, hash: &ContentHash) -> Option<(&Path, u64, u32)> {
        let at = self.chunks.get(hash)?;
        Some((self.files.get(at.file)?.as_path(), at.offset, at.size))
    }

    /// The chunk's bytes, read from its file and checked against its sha256: a file changed
    /// since the scan gives [`WorkspaceError::ChangedSinceScan`], never other bytes.
    pub fn read(&self, hash: &ContentHash) -> WorkspaceResult<Vec<u8>> {
        let (path, offset, size) = self
            .location(hash)
            .ok_or(WorkspaceError::UnknownChunk(*hash))?;
        let changed = || WorkspaceError::ChangedSinceScan {
            path: path.to_owned(),
            hash: *hash,
            offset,
        };
        let context = || format!("reading a chunk of {}", path.display());
        let mut file = match File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Err(changed()),
            Err(err) => return Err(WorkspaceError::io(context(), err)),
        };
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| WorkspaceError::io(context(), e))?;
        let mut bytes = vec![0; size as usize];
        match file.read_exact(&mut bytes) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::UnexpectedEof => return Err(changed()),
            Err(err) => return Err(WorkspaceError::io(context(), err)),
        }
        if ContentHash::of(&bytes) != *hash {
            return Err(changed());
        }
        Ok(bytes)
    }
}
