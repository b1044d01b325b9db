//! Writes and deletes of many KV values made durable together: a
//! whole-file snapshot PUT writes its chunks, and a collection deletes
//! them, a batch at a time.
//!
//! A batched value is written to a temporary file and made durable there:
//! fsynced alone (a whole-file PUT's few large chunks, written in the
//! background while its body still arrives), or, for a batch upload's many
//! small ones, all at once by one `syncfs` of the file system once every
//! file is written ([`KvFolder::sync_staged`]): one flush, not one a file.
//! The batch's settle renames each into place and fsyncs each folder
//! touched once. A key therefore only ever names a whole, durable value,
//! as with [`KvFolder::set`]; what a crash leaves before the settle is
//! temporary files, removed at the next start.

use super::folder::{BucketHandle, KvError, KvFolder, create_dirs, key_path, sync_dir};
use stasis_sqlite::Durability;
use std::{
    collections::BTreeSet,
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
};

/// A value written to its temporary file (durably, with fsync durability),
/// not yet in place.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    path: PathBuf,
}

impl Staged {
    /// Removes the temporary file of a value that will not be settled.
    pub fn discard(self) {
        let _ = fs::remove_file(&self.temp);
    }
}

/// When a staged value's bytes are made durable (with fsync durability).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StagedSync {
    /// Its file is fsynced as soon as it is written.
    Alone,
    /// Later, with the batch's others: [`KvFolder::sync_staged`].
    WithBatch,
}

impl KvFolder {
    /// Writes `value` for `key` to a temporary file, fsynced (with fsync
    /// durability) as `sync` says: in place once [`KvFolder::settle`] ran.
    pub fn stage(
        &self,
        bucket: &BucketHandle,
        key: &str,
        value: &[u8],
        sync: StagedSync,
    ) -> Result<Staged, KvError> {
        let path = key_path(bucket, key)?;
        let temp = self
            .temp_file(bucket)
            .map_err(|(path, source)| KvError::Io { path, source })?;
        let written = fs::File::create(&temp).and_then(|mut file| {
            file.write_all(value)?;
            if self.durability() == Durability::Fsync && sync == StagedSync::Alone {
                file.sync_all()?;
            }
            Ok(())
        });
        if let Err(source) = written {
            let _ = fs::remove_file(&temp);
            return Err(KvError::Io { path: temp, source });
        }
        Ok(Staged { temp, path })
    }

    /// Makes the bytes of every value staged [`StagedSync::WithBatch`] in
    /// `bucket` durable (with fsync durability): one `syncfs` of the file
    /// system that holds it, which flushes every file written, where an
    /// fsync of each would wait for the disk once a file.
    pub fn sync_staged(&self, bucket: &BucketHandle) -> Result<(), KvError> {
        if self.durability() != Durability::Fsync {
            return Ok(());
        }
        let io = |source| KvError::Io {
            path: bucket.dir.clone(),
            source,
        };
        let folder = fs::File::open(&bucket.dir).map_err(io)?;
        rustix::fs::syncfs(&folder).map_err(|errno| io(errno.into()))
    }

    /// Puts every staged value in place durably: each renamed, then each
    /// folder fsynced once. On a failure the values not yet in place are
    /// discarded.
    pub fn settle(&self, staged: Vec<Staged>) -> Result<(), KvError> {
        if staged.is_empty() {
            return Ok(());
        }
        let mut folders = BTreeSet::new();
        let mut staged = staged.into_iter();
        while let Some(value) = staged.next() {
            let parent = value
                .path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let placed = create_dirs(&parent, self.durability())
                .and_then(|()| fs::rename(&value.temp, &value.path));
            if let Err(source) = placed {
                let path = value.path.clone();
                value.discard();
                staged.for_each(Staged::discard);
                return Err(KvError::Io { path, source });
            }
            folders.insert(parent);
        }
        self.sync_folders(&folders)
    }

    /// Removes every `key` (a missing one is fine), then fsyncs each
    /// folder touched once.
    pub fn delete_many(&self, bucket: &BucketHandle, keys: &[String]) -> Result<(), KvError> {
        let mut folders = BTreeSet::new();
        for key in keys {
            let path = key_path(bucket, key)?;
            match fs::remove_file(&path) {
                Ok(()) => {
                    if let Some(parent) = path.parent() {
                        folders.insert(parent.to_path_buf());
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(KvError::Io { path, source }),
            }
        }
        self.sync_folders(&folders)
    }

    fn sync_folders(&self, folders: &BTreeSet<PathBuf>) -> Result<(), KvError> {
        if self.durability() != Durability::Fsync {
            return Ok(());
        }
        for folder in folders {
            sync_dir(folder).map_err(|source| KvError::Io {
                path: folder.clone(),
                source,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::kv::folder::tests::{folder, temp_files};

    #[test]
    fn staged_values_appear_only_once_settled() {
        let (_dir, kv, bucket) = folder();
        let staged: Vec<Staged> = (0..10)
            .map(|k| {
                let key = format!("t/r/a/chunks/c{k}");
                kv.stage(
                    &bucket,
                    &key,
                    format!("value {k}").as_bytes(),
                    StagedSync::WithBatch,
                )
                .expect("stage")
            })
            .collect();
        assert_eq!(kv.get(&bucket, "t/r/a/chunks/c3").expect("get"), None);
        kv.sync_staged(&bucket).expect("sync");
        kv.settle(staged).expect("settle");
        for k in 0..10 {
            let value = kv.get(&bucket, &format!("t/r/a/chunks/c{k}")).expect("get");
            assert_eq!(value, Some(format!("value {k}").into_bytes()));
        }
        assert_eq!(kv.list(&bucket, "t/r/a/", None).expect("list").0.len(), 10);
    }

    #[test]
    fn discarded_values_leave_no_file() {
        let (_dir, kv, bucket) = folder();
        kv.stage(&bucket, "k", b"v", StagedSync::Alone)
            .expect("stage")
            .discard();
        assert_eq!(kv.get(&bucket, "k").expect("get"), None);
        assert!(bucket.dir.join(".tmp").is_dir(), "the value was staged");
        assert_eq!(temp_files(&bucket.dir), 0);
    }

    #[test]
    fn many_keys_go_at_once_and_missing_ones_are_fine() {
        let (_dir, kv, bucket) = folder();
        kv.set(&bucket, "a/x", b"1").expect("set");
        kv.set(&bucket, "a/y", b"2").expect("set");
        kv.set(&bucket, "b/z", b"3").expect("set");
        let keys = ["a/x", "b/z", "a/never"].map(String::from);
        kv.delete_many(&bucket, &keys).expect("delete");
        assert_eq!(kv.list(&bucket, "", None).expect("list").0, vec!["a/y"]);
        assert!(kv.delete_many(&bucket, &["../x".into()]).is_err());
    }
}
