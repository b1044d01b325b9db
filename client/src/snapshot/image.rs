//! What a push uploads: a consistent copy in memory or in a file nothing writes to meanwhile
//! ([`LocalCopy`] takes one of a live database), read by chunk or whole.

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, Read};
use std::ops::Deref;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use super::chunks::ChunkedFile;
use crate::backup::{self, BackupOptions, MEMORY_COPY_MAX_BYTES, MemoryCopy};
use crate::error::{Error, Result};

/// The bytes of a snapshot being pushed.
#[derive(Debug, Clone, Copy)]
pub enum Image<'a> {
    /// Held in memory.
    Memory(&'a [u8]),
    /// A file nothing writes to while it is pushed.
    File(&'a Path),
}

impl<'a> Image<'a> {
    /// Hashes the image in chunks (see [`ChunkedFile`]).
    pub fn chunked(&self) -> Result<ChunkedFile> {
        match self {
            Image::Memory(bytes) => Ok(ChunkedFile::of_bytes(bytes)),
            Image::File(path) => ChunkedFile::scan(path),
        }
    }

    /// Opens the image for reading.
    pub(crate) fn open(&self) -> Result<Opened<'a>> {
        match *self {
            Image::Memory(bytes) => Ok(Opened::Memory(bytes)),
            Image::File(path) => File::open(path)
                .map(|file| Opened::File(file, path))
                .map_err(|e| Error::io(format!("reading {}", path.display()), e)),
        }
    }
}

/// An image open for reading.
pub(crate) enum Opened<'a> {
    Memory(&'a [u8]),
    File(File, &'a Path),
}

impl<'a> Opened<'a> {
    /// The bytes of chunk `index` of `chunked`.
    pub fn chunk(&self, chunked: &ChunkedFile, index: usize) -> Result<Cow<'_, [u8]>> {
        let (offset, len) = chunked.range(index);
        let out_of_range = || io::Error::new(io::ErrorKind::InvalidInput, "chunk out of range");
        match self {
            Opened::Memory(bytes) => usize::try_from(offset)
                .ok()
                .zip(usize::try_from(offset + len).ok())
                .and_then(|(start, end)| bytes.get(start..end))
                .map(Cow::Borrowed)
                .ok_or_else(|| Error::io("reading the copy in memory", out_of_range())),
            Opened::File(file, path) => {
                let len = usize::try_from(len).map_err(|_| out_of_range());
                let mut bytes = vec![0u8; len.map_err(|e| Error::io("a chunk", e))?];
                file.read_exact_at(&mut bytes, offset)
                    .map(|()| Cow::Owned(bytes))
                    .map_err(|e| Error::io(format!("reading {}", path.display()), e))
            }
        }
    }

    /// The whole image as a reader.
    pub fn into_reader(self) -> Box<dyn Read + 'a> {
        match self {
            Opened::Memory(bytes) => Box::new(bytes),
            Opened::File(file, _) => Box::new(file),
        }
    }
}

/// A consistent copy of a live database: in memory up to [`MEMORY_COPY_MAX_BYTES`], else a
/// file in a temporary directory (removed when this is dropped).
#[derive(Debug)]
pub struct LocalCopy {
    held: Held,
}

#[derive(Debug)]
enum Held {
    Memory(MemoryCopy),
    File { _dir: TempDir, path: PathBuf },
}

impl LocalCopy {
    /// Copies the live database at `db` with SQLite's online backup (see [`backup`]); a file
    /// copy goes into a new temporary directory under `temp_dir` (the system's when `None`).
    pub fn take(db: &Path, options: &BackupOptions, temp_dir: Option<&Path>) -> Result<Self> {
        if let Some(memory) = backup::backup_to_memory(db, options, MEMORY_COPY_MAX_BYTES)? {
            return Ok(LocalCopy {
                held: Held::Memory(memory),
            });
        }
        let mut builder = tempfile::Builder::new();
        builder.prefix("stasis-push-");
        let dir = match temp_dir {
            Some(parent) => builder.tempdir_in(parent),
            None => builder.tempdir(),
        }
        .map_err(|e| Error::io("creating a temporary directory for the copy", e))?;
        let path = dir.path().join("kilo.db");
        backup::backup_database(db, &path, options, |_, _| {})?;
        Ok(LocalCopy {
            held: Held::File { _dir: dir, path },
        })
    }

    /// The copy's bytes, to hash and upload.
    pub fn bytes(&mut self) -> Result<CopyBytes<'_>> {
        match &mut self.held {
            Held::Memory(memory) => Ok(CopyBytes::Memory(Box::new(memory.bytes()?))),
            Held::File { path, .. } => Ok(CopyBytes::File(path)),
        }
    }
}

/// A [`LocalCopy`]'s bytes, borrowed.
pub enum CopyBytes<'a> {
    /// In memory.
    Memory(Box<dyn Deref<Target = [u8]> + 'a>),
    /// In a file.
    File(&'a Path),
}

impl CopyBytes<'_> {
    /// The bytes as an [`Image`].
    pub fn image(&self) -> Image<'_> {
        match self {
            CopyBytes::Memory(bytes) => Image::Memory(bytes),
            CopyBytes::File(path) => Image::File(path),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use crate::snapshot::chunks::sha256_hex;

    #[test]
    fn a_chunk_reads_the_same_from_a_file_and_from_memory() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("f");
        let bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 241) as u8).collect();
        std::fs::write(&path, &bytes).expect("write");
        let chunked = Image::File(&path).chunked().expect("scan");
        assert_eq!(chunked, Image::Memory(&bytes).chunked().expect("hash"));
        for image in [Image::File(&path), Image::Memory(&bytes)] {
            let opened = image.open().expect("open");
            let last = opened.chunk(&chunked, 2).expect("read");
            assert_eq!(*last, bytes[64 * 1024..]);
            assert_eq!(sha256_hex(&last), chunked.chunks[2]);
            let mut whole = Vec::new();
            opened
                .into_reader()
                .read_to_end(&mut whole)
                .expect("read all");
            assert_eq!(whole, bytes);
        }
    }
}
