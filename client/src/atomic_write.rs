//! Writing a file so that readers see the old content or the new, never a part: the bytes go to
//! a temporary file in the same directory, are fsynced, and are renamed over the target, and
//! the directory is fsynced. Dropping an [`AtomicFile`] without [`AtomicFile::commit`] removes
//! the temporary file and leaves the target untouched.
//!
//! A process killed outright (SIGKILL) between creating and committing can leave the temporary
//! file behind: it is named `.<target name>.<random>.stasis-tmp`, is never read, and can be
//! deleted.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// Suffix of the temporary files, so that leftovers are recognisable.
pub const TEMP_SUFFIX: &str = ".stasis-tmp";

/// A file being written in place of `target`.
#[derive(Debug)]
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
}

impl AtomicFile {
    /// Starts writing a replacement for `target`, whose directory must exist.
    pub fn create(target: &Path) -> Result<Self> {
        let dir = parent_dir(target);
        let name = target
            .file_name()
            .ok_or_else(|| {
                Error::io(
                    format!("writing {}", target.display()),
                    io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(TEMP_SUFFIX)
            .tempfile_in(dir)
            .map_err(|e| Error::io(format!("creating a temporary file in {}", dir.display()), e))?;
        Ok(AtomicFile {
            temp,
            target: target.to_owned(),
        })
    }

    /// The path of the temporary file (for messages and tests).
    pub fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The file being written.
    pub fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Makes the bytes written so far durable (the commit syncs again, cheaply, whatever
    /// followed).
    pub fn sync(&self) -> Result<()> {
        let context = || format!("writing {}", self.target.display());
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| Error::io(context(), e))
    }

    /// Makes the new content durable and puts it in place: fsync, `before_rename` (e.g. removing
    /// files that belong to the old content), rename, fsync of the directory.
    pub fn commit_with(self, before_rename: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
        let AtomicFile { mut temp, target } = self;
        let context = || format!("writing {}", target.display());
        temp.flush().map_err(|e| Error::io(context(), e))?;
        temp.as_file()
            .sync_all()
            .map_err(|e| Error::io(context(), e))?;
        before_rename(&target)?;
        temp.persist(&target)
            .map_err(|e| Error::io(format!("renaming into {}", target.display()), e.error))?;
        sync_dir(parent_dir(&target))
    }

    /// [`AtomicFile::commit_with`] with nothing to do before the rename.
    pub fn commit(self) -> Result<()> {
        self.commit_with(|_| Ok(()))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.temp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.temp.flush()
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Fsyncs a directory so that a rename in it survives a crash.
fn sync_dir(dir: &Path) -> Result<()> {
    let context = || format!("syncing directory {}", dir.display());
    let handle = File::open(dir).map_err(|e| Error::io(context(), e))?;
    handle.sync_all().map_err(|e| Error::io(context(), e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_commit_replaces_the_target_whole() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("kilo.db");
        std::fs::write(&target, b"old").expect("write");
        let mut file = AtomicFile::create(&target)?;
        file.write_all(b"new content").expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"old");
        file.commit()?;
        assert_eq!(std::fs::read(&target).expect("read"), b"new content");
        assert_eq!(entries(dir.path()), ["kilo.db"]);
        Ok(())
    }

    #[test]
    fn dropping_without_commit_leaves_the_old_file_and_no_temporary() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("kilo.db");
        std::fs::write(&target, b"old").expect("write");
        let mut file = AtomicFile::create(&target)?;
        file.write_all(b"half").expect("write");
        assert!(file.temp_path().exists());
        drop(file);
        assert_eq!(std::fs::read(&target).expect("read"), b"old");
        assert_eq!(entries(dir.path()), ["kilo.db"]);
        Ok(())
    }

    #[test]
    fn a_failing_pre_rename_step_leaves_the_old_file() -> Result<()> {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("kilo.db");
        std::fs::write(&target, b"old").expect("write");
        let mut file = AtomicFile::create(&target)?;
        file.write_all(b"new").expect("write");
        let result = file.commit_with(|_| Err(Error::Config("stop".into())));
        assert!(result.is_err());
        assert_eq!(std::fs::read(&target).expect("read"), b"old");
        assert_eq!(entries(dir.path()), ["kilo.db"]);
        Ok(())
    }
}
