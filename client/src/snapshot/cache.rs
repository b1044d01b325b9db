//! The local chunk cache: one file per chunk, named by its sha256, so a push fills it and a pull
//! after it fetches nothing. Content-addressed, so an entry can be stale only by rotting: every
//! read re-hashes the bytes, and an entry that no longer matches its name is removed and
//! reported as absent (the chunk is fetched again).
//!
//! It is a cache, never a store: entries are written without fsync (a torn one fails its hash),
//! a failure to write one is ignored, and the whole is kept under a size bound by evicting the
//! entries read or written longest ago (a read touches the entry's modification time).

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::chunks::sha256_hex;
use super::is_sha256_hex;
use crate::error::{Error, Result};

/// The default bound on the cache: 2 GiB.
pub const DEFAULT_CACHE_BYTES: u64 = 2 << 30;
/// The environment variable naming the cache directory.
pub const CACHE_DIR_ENV: &str = "STASIS_CHUNK_CACHE";

/// A directory of chunks named by their sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkCache {
    dir: PathBuf,
    max_bytes: u64,
}

/// What reading an entry found.
#[derive(Debug, PartialEq, Eq)]
pub enum CacheRead {
    /// The entry's bytes, which hash to its name.
    Hit(Vec<u8>),
    /// No entry.
    Miss,
    /// An entry whose bytes do not hash to its name: removed.
    Rejected,
}

impl ChunkCache {
    /// A cache in `dir` (created on first write) holding at most `max_bytes`.
    pub fn new(dir: impl Into<PathBuf>, max_bytes: u64) -> Self {
        ChunkCache {
            dir: dir.into(),
            max_bytes,
        }
    }

    /// The default directory: `$STASIS_CHUNK_CACHE`, else `$XDG_CACHE_HOME/stasis/chunks`, else
    /// `$HOME/.cache/stasis/chunks`; `None` when none of them is set.
    pub fn default_dir() -> Option<PathBuf> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var(CACHE_DIR_ENV) {
            return Some(dir.into());
        }
        let base = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| Path::new(&home).join(".cache")))?;
        Some(base.join("stasis/chunks"))
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, sha256: &str) -> Option<PathBuf> {
        is_sha256_hex(sha256).then(|| self.dir.join(sha256.to_ascii_lowercase()))
    }

    /// Whether an entry named `sha256` exists (unverified: for deciding what to write).
    pub fn contains(&self, sha256: &str) -> bool {
        self.entry(sha256).is_some_and(|path| path.is_file())
    }

    /// The entry's bytes when they hash to `sha256`; a mismatching entry is removed.
    pub fn get(&self, sha256: &str) -> CacheRead {
        let Some(path) = self.entry(sha256) else {
            return CacheRead::Miss;
        };
        let Ok(bytes) = fs::read(&path) else {
            return CacheRead::Miss;
        };
        if !sha256_hex(&bytes).eq_ignore_ascii_case(sha256) {
            // A rotten entry would be rejected again at every read.
            let _ = fs::remove_file(&path);
            return CacheRead::Rejected;
        }
        // Touched, so the eviction keeps what is in use. Failing to touch costs nothing.
        if let Ok(file) = File::options().append(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        CacheRead::Hit(bytes)
    }

    /// Stores `bytes` as the entry `sha256` (the caller has checked they hash to it). Best
    /// effort: a full disk or a read-only directory only means a later fetch.
    pub fn put(&self, sha256: &str, bytes: &[u8]) {
        let Some(path) = self.entry(sha256) else {
            return;
        };
        if path.is_file() {
            return;
        }
        let _ = self.write_entry(&path, bytes);
    }

    fn write_entry(&self, path: &Path, bytes: &[u8]) -> io::Result<()> {
        fs::create_dir_all(&self.dir)?;
        let mut temp = tempfile::Builder::new()
            .prefix(".chunk.")
            .tempfile_in(&self.dir)?;
        temp.write_all(bytes)?;
        temp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// Puts the chunks of the file at `path` it lacks into the cache (chunk `i` of `chunks`
    /// at `i * chunk_size`), then trims it (see [`ChunkCache::fill_with`]).
    pub(crate) fn fill_from_file(&self, path: &Path, chunk_size: u64, chunks: &[String]) {
        let Ok(source) = File::open(path) else { return };
        let Ok(size) = source.metadata().map(|m| m.len()) else {
            return;
        };
        self.fill_with(chunks, |index| {
            let offset = (index as u64).saturating_mul(chunk_size);
            let len = super::chunks::chunk_len(size, chunk_size, index as u64);
            let mut bytes = vec![0u8; usize::try_from(len).ok()?];
            source.read_exact_at(&mut bytes, offset).ok()?;
            Some(bytes)
        });
    }

    /// Puts each of `chunks` it lacks into the cache, its bytes read by `read(index)`, then
    /// trims it. Best effort: the cache only saves later fetches, and an entry that does not
    /// match its name is rejected when read.
    pub(crate) fn fill_with<B: AsRef<[u8]>>(
        &self,
        chunks: &[String],
        mut read: impl FnMut(usize) -> Option<B>,
    ) {
        for (index, sha) in chunks.iter().enumerate() {
            if self.contains(sha) {
                continue;
            }
            if let Some(bytes) = read(index) {
                self.put(sha, bytes.as_ref());
            }
        }
        // A cache over its bound is trimmed again by the next push or pull.
        let _ = self.trim();
    }

    /// Evicts the entries used longest ago until the cache holds at most its bound; answers
    /// how many were removed.
    pub fn trim(&self) -> Result<usize> {
        let context = || format!("trimming the chunk cache {}", self.dir.display());
        let listing = match fs::read_dir(&self.dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(context(), e)),
        };
        let mut entries = Vec::new();
        let mut total = 0u64;
        for entry in listing {
            let entry = entry.map_err(|e| Error::io(context(), e))?;
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            total += meta.len();
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            entries.push((used, meta.len(), entry.path()));
        }
        if total <= self.max_bytes {
            return Ok(0);
        }
        entries.sort();
        let mut removed = 0;
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= len;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use std::time::Duration;

    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_stored_chunk_is_read_back_and_a_missing_one_is_a_miss() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = ChunkCache::new(dir.path().join("chunks"), 1 << 20);
        let sha = sha256_hex(b"page");
        assert_eq!(cache.get(&sha), CacheRead::Miss);
        cache.put(&sha, b"page");
        assert!(cache.contains(&sha));
        assert_eq!(cache.get(&sha), CacheRead::Hit(b"page".to_vec()));
        assert_eq!(names(cache.dir()), [sha]);
    }

    #[test]
    fn an_entry_that_no_longer_matches_its_name_is_rejected_and_removed() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = ChunkCache::new(dir.path(), 1 << 20);
        let sha = sha256_hex(b"page");
        cache.put(&sha, b"page");
        fs::write(dir.path().join(&sha), b"pagf").expect("rot");
        assert_eq!(cache.get(&sha), CacheRead::Rejected);
        assert!(!cache.contains(&sha));
        assert_eq!(cache.get(&sha), CacheRead::Miss);
    }

    #[test]
    fn names_that_are_not_hashes_are_never_paths() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = ChunkCache::new(dir.path(), 1 << 20);
        cache.put("../escape", b"x");
        assert_eq!(cache.get("../escape"), CacheRead::Miss);
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn trimming_evicts_the_entries_used_longest_ago() {
        let dir = tempfile::tempdir().expect("dir");
        let cache = ChunkCache::new(dir.path(), 2500);
        let blobs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 1000]).collect();
        let shas: Vec<String> = blobs.iter().map(|b| sha256_hex(b)).collect();
        let epoch = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        for (i, (sha, blob)) in shas.iter().zip(&blobs).enumerate() {
            cache.put(sha, blob);
            let file = File::options()
                .append(true)
                .open(dir.path().join(sha))
                .expect("open");
            file.set_modified(epoch + Duration::from_secs(i as u64))
                .expect("time");
        }
        // Reading the oldest makes it the newest.
        assert!(matches!(cache.get(&shas[0]), CacheRead::Hit(_)));
        assert_eq!(cache.trim().expect("trim"), 2);
        let mut kept = vec![shas[0].clone(), shas[3].clone()];
        kept.sort();
        assert_eq!(names(dir.path()), kept);
        assert_eq!(cache.trim().expect("trim"), 0);
    }
}
