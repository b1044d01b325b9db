//! The host's KV store: one folder per bucket, one file per key.
//!
//! A value is written to a temporary file, fsynced, and renamed over its
//! key, so a reader sees a whole value or none, and an acknowledged write
//! survives a crash. Keys are `/`-separated paths of plain segments.

use stasis_sqlite::Durability;
use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

/// A bucket a guest opened: the handle the `kv-store` resource carries.
#[derive(Debug, Clone)]
pub struct BucketHandle {
    /// Its folder.
    pub dir: PathBuf,
}

/// Why a KV operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    /// The bucket or key is not a plain path.
    #[error("{0}")]
    InvalidName(String),
    /// The disk said no.
    #[error("{path}: {source}")]
    Io {
        /// What was touched.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

/// The KV folder under the data folder.
#[derive(Debug)]
pub struct KvFolder {
    root: PathBuf,
    durability: Durability,
    temp_counter: AtomicU64,
}

/// The most keys one listing page returns.
const LIST_PAGE: usize = 1_000;
/// Temporary files live here, inside each bucket (same file system as the
/// keys, so the rename is atomic); dot-names are never valid keys.
const TEMP_DIR: &str = ".tmp";
/// Temporary files are spread over this many folders under [`TEMP_DIR`]:
/// creating a file locks its folder, and a batch's writer threads would
/// otherwise wait on each other for one.
const TEMP_LANES: u64 = 8;

impl KvFolder {
    /// The store rooted at `root`. Temporary files left by a crash are
    /// removed (only one host serves a data folder at a time).
    pub fn new(root: PathBuf, durability: Durability) -> Self {
        if let Ok(buckets) = fs::read_dir(&root) {
            for bucket in buckets.flatten() {
                let _ = fs::remove_dir_all(bucket.path().join(TEMP_DIR));
            }
        }
        Self {
            root,
            durability,
            temp_counter: AtomicU64::new(0),
        }
    }

    /// Opens a bucket (created on first write).
    pub fn open(&self, name: &str) -> Result<BucketHandle, KvError> {
        check_segment(name)?;
        Ok(BucketHandle {
            dir: self.root.join(name),
        })
    }

    /// The value under `key`.
    pub fn get(&self, bucket: &BucketHandle, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        let path = key_path(bucket, key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(KvError::Io { path, source }),
        }
    }

    /// Whether `key` holds a value.
    pub fn exists(&self, bucket: &BucketHandle, key: &str) -> Result<bool, KvError> {
        Ok(key_path(bucket, key)?.is_file())
    }

    /// Stores `value` under `key`, whole and durably.
    pub fn set(&self, bucket: &BucketHandle, key: &str, value: &[u8]) -> Result<(), KvError> {
        let path = key_path(bucket, key)?;
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| KvError::Io { path, source }
        };
        let temp = self
            .temp_file(bucket)
            .map_err(|(path, source)| KvError::Io { path, source })?;
        let written = (|| {
            let mut file = fs::File::create(&temp)?;
            file.write_all(value)?;
            if self.durability == Durability::Fsync {
                file.sync_all()?;
            }
            Ok(())
        })();
        if let Err(source) = written {
            let _ = fs::remove_file(&temp);
            return Err(KvError::Io { path: temp, source });
        }
        let parent = path.parent().unwrap_or(&bucket.dir).to_path_buf();
        let created = create_dirs(&parent, self.durability).map_err(io(&parent));
        let renamed = created.and_then(|()| fs::rename(&temp, &path).map_err(io(&path)));
        if renamed.is_err() {
            let _ = fs::remove_file(&temp);
        }
        renamed?;
        if self.durability == Durability::Fsync {
            sync_dir(&parent).map_err(io(&parent))?;
        }
        Ok(())
    }

    /// Whether values are fsynced.
    pub(super) fn durability(&self) -> Durability {
        self.durability
    }

    /// A new temporary file's path in `bucket` (its folder created).
    pub(super) fn temp_file(&self, bucket: &BucketHandle) -> Result<PathBuf, (PathBuf, io::Error)> {
        let n = self.temp_counter.fetch_add(1, Ordering::Relaxed);
        let lane = bucket.dir.join(TEMP_DIR).join((n % TEMP_LANES).to_string());
        // A `mkdir` of an existing folder still locks its parent: look first.
        if !lane.is_dir() {
            fs::create_dir_all(&lane).map_err(|err| (lane.clone(), err))?;
        }
        Ok(lane.join(format!("{}-{n}", std::process::id())))
    }

    /// Removes `key`; a missing key is fine.
    pub fn delete(&self, bucket: &BucketHandle, key: &str) -> Result<(), KvError> {
        let path = key_path(bucket, key)?;
        match fs::remove_file(&path) {
            Ok(()) => {
                if self.durability == Durability::Fsync
                    && let Some(parent) = path.parent()
                {
                    let _ = sync_dir(parent);
                }
                Ok(())
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(KvError::Io { path, source }),
        }
    }

    /// Refuses a key that is not a plain path.
    pub fn check_key(&self, key: &str) -> Result<(), KvError> {
        key.split('/').try_for_each(check_segment)
    }

    /// Removes every `(bucket, key)`; failures are logged, and the keys they
    /// leave are orphans a later sweep removes.
    pub fn delete_all(&self, keys: &[(BucketHandle, String)]) {
        for (bucket, key) in keys {
            if let Err(err) = self.delete(bucket, key) {
                tracing::warn!(%err, key, "a superseded KV value could not be deleted");
            }
        }
    }

    /// Keys starting with `prefix`, sorted, one page after `cursor` (the
    /// last key of the previous page).
    pub fn list(
        &self,
        bucket: &BucketHandle,
        prefix: &str,
        cursor: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>), KvError> {
        // Walk only the folder the prefix's complete segments name.
        let folder = match prefix.rfind('/') {
            Some(end) => &prefix[..end],
            None => "",
        };
        let start = if folder.is_empty() {
            bucket.dir.clone()
        } else {
            key_path(bucket, folder)?
        };
        let mut keys = Vec::new();
        walk(&start, folder, &mut keys).map_err(|source| KvError::Io {
            path: start.clone(),
            source,
        })?;
        keys.retain(|k| k.starts_with(prefix) && cursor.is_none_or(|c| k.as_str() > c));
        keys.sort();
        let next = (keys.len() > LIST_PAGE).then(|| keys[LIST_PAGE - 1].clone());
        keys.truncate(LIST_PAGE);
        Ok((keys, next))
    }
}

/// Collects the keys of every file under `dir`, `base` being its key path.
fn walk(dir: &Path, base: &str, keys: &mut Vec<String>) -> io::Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err),
    };
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let key = if base.is_empty() {
            name
        } else {
            format!("{base}/{name}")
        };
        if entry.file_type()?.is_dir() {
            walk(&entry.path(), &key, keys)?;
        } else {
            keys.push(key);
        }
    }
    Ok(())
}

/// The file of `key`: each `/`-separated segment must be a plain name.
pub(super) fn key_path(bucket: &BucketHandle, key: &str) -> Result<PathBuf, KvError> {
    let mut path = bucket.dir.clone();
    for segment in key.split('/') {
        check_segment(segment)?;
        path.push(segment);
    }
    Ok(path)
}

fn check_segment(segment: &str) -> Result<(), KvError> {
    let plain = !segment.is_empty()
        && segment.len() <= 255
        && !segment.starts_with('.')
        && !segment.contains(['\0', '\\']);
    if plain {
        Ok(())
    } else {
        Err(KvError::InvalidName(format!(
            "KV names are '/'-separated segments of 1 to 255 bytes that do not start with '.'; \
             got {segment:?}"
        )))
    }
}

/// Creates `dir` and its parents; with fsync durability each new entry is
/// synced into its parent.
pub(super) fn create_dirs(dir: &Path, durability: Durability) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dirs(parent, durability)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err),
    }
    if durability == Durability::Fsync
        && let Some(parent) = dir.parent()
    {
        sync_dir(parent)?;
    }
    Ok(())
}

pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The temporary files in the lanes of the bucket folder `bucket_dir`.
    pub(in crate::runtime) fn temp_files(bucket_dir: &Path) -> usize {
        let Ok(lanes) = fs::read_dir(bucket_dir.join(TEMP_DIR)) else {
            return 0;
        };
        lanes
            .flatten()
            .map(|lane| fs::read_dir(lane.path()).map_or(0, Iterator::count))
            .sum()
    }

    /// A fresh KV folder with its snapshots bucket (the batch's tests too).
    pub(in crate::runtime) fn folder() -> (tempfile::TempDir, KvFolder, BucketHandle) {
        let dir = tempfile::tempdir().expect("temp dir");
        let kv = KvFolder::new(dir.path().join("kv"), Durability::Fsync);
        let bucket = kv.open("snapshots").expect("bucket");
        (dir, kv, bucket)
    }

    #[test]
    fn values_round_trip_and_list_by_prefix() {
        let (_dir, kv, bucket) = folder();
        kv.set(&bucket, "s/t/r/a/v1", b"one").expect("set");
        kv.set(&bucket, "s/t/r/a/v2", b"two").expect("set");
        kv.set(&bucket, "s/t/r/b/v1", b"other").expect("set");
        assert_eq!(
            kv.get(&bucket, "s/t/r/a/v2").expect("get"),
            Some(b"two".to_vec())
        );
        assert_eq!(kv.get(&bucket, "s/t/r/a/v9").expect("get"), None);
        let (keys, next) = kv.list(&bucket, "s/t/r/a/", None).expect("list");
        assert_eq!(keys, vec!["s/t/r/a/v1", "s/t/r/a/v2"]);
        assert_eq!(next, None);
        let (keys, _) = kv.list(&bucket, "s/t/r/", None).expect("list");
        assert_eq!(keys.len(), 3);
        kv.delete(&bucket, "s/t/r/a/v1").expect("delete");
        kv.delete(&bucket, "s/t/r/a/v1")
            .expect("deleting twice is fine");
        assert!(!kv.exists(&bucket, "s/t/r/a/v1").expect("exists"));
    }

    #[test]
    fn names_that_leave_the_bucket_are_refused() {
        let (_dir, kv, bucket) = folder();
        for key in ["../x", "a/../../x", "", "a//b", ".hidden", "a/.tmp/x"] {
            assert!(kv.set(&bucket, key, b"x").is_err(), "{key:?}");
        }
        assert!(kv.open("..").is_err());
    }

    #[test]
    fn temporary_files_are_not_keys_and_go_at_start() {
        let (dir, kv, bucket) = folder();
        kv.set(&bucket, "k", b"v").expect("set");
        fs::write(bucket.dir.join(TEMP_DIR).join("stale"), b"half").expect("stale temp");
        assert_eq!(kv.list(&bucket, "", None).expect("list").0, vec!["k"]);
        let _ = KvFolder::new(dir.path().join("kv"), Durability::Fsync);
        assert!(!bucket.dir.join(TEMP_DIR).exists());
    }
}
