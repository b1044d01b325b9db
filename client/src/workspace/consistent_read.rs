//! Reading a file so that what is stored is one state of it, never a torn mix of two.
//!
//! The file is opened without following a link, and stamped (`fstat`) before and after it is
//! read; the path is stamped after too (a rename over it changes the inode). Any difference,
//! or a byte count other than the size, means it changed while it was read: it is read again,
//! up to a bound, then the scan fails with [`WorkspaceError::Unstable`].
//!
//! A write in the same timestamp tick as the first stamp would leave mtime and ctime as they
//! were, so a file changed less than a tick before its read waits the tick out first (as git
//! treats "racily clean" entries): after that, any write moves its timestamps. The same
//! guarantee lets the index trust a stamp it recorded.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustix::fs::{Mode, OFlags};

use super::chunker::{ChunkedContent, Chunker};
use super::error::{WorkspaceError, WorkspaceResult};
use super::stamp::{FileStamp, is_executable};

/// Called after a file's bytes were read and before its second stamp: `(path, attempt)`.
/// Tests change the file there to prove a torn read is caught.
pub type ReadHook = Arc<dyn Fn(&Path, u32) + Send + Sync>;

/// How files are read.
pub(crate) struct ReadSettings<'a> {
    pub chunker: &'a Chunker,
    pub max_attempts: u32,
    pub tick: Duration,
    pub hook: Option<&'a ReadHook>,
}

/// What reading a path found.
pub(crate) enum ReadOutcome {
    /// One consistent state of the file.
    Read(FileRead),
    /// It was deleted before it could be opened.
    Vanished,
    /// It is no longer a regular file (replaced by a link, a fifo, ...).
    NotRegular,
}

/// A file read whole and unchanged throughout.
pub(crate) struct FileRead {
    /// Its stamp, the same before and after the read.
    pub stamp: FileStamp,
    /// The owner's executable bit.
    pub executable: bool,
    /// Its chunks.
    pub content: ChunkedContent,
    /// How many reads it took (1 when nothing changed).
    pub attempts: u32,
}

/// Reads `path` until one read sees the file unchanged throughout.
pub(crate) fn read_consistently(
    path: &Path,
    settings: &ReadSettings,
) -> WorkspaceResult<ReadOutcome> {
    let context = || format!("reading {}", path.display());
    for attempt in 1..=settings.max_attempts {
        let file = match open_no_follow(path) {
            Ok(file) => file,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(ReadOutcome::Vanished),
            // ELOOP: a symlink took the file's place.
            Err(err) if err.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                return Ok(ReadOutcome::NotRegular);
            }
            Err(err) => return Err(WorkspaceError::io(context(), err)),
        };
        let meta = file
            .metadata()
            .map_err(|e| WorkspaceError::io(context(), e))?;
        if !meta.file_type().is_file() {
            return Ok(ReadOutcome::NotRegular);
        }
        let before = FileStamp::of(&meta);
        let age = before.age_at(SystemTime::now());
        if age < settings.tick {
            std::thread::sleep(settings.tick - age);
            let again = file
                .metadata()
                .map_err(|e| WorkspaceError::io(context(), e))?;
            if FileStamp::of(&again) != before {
                continue;
            }
        }
        let content = settings
            .chunker
            .chunk(&file, |_, _| {})
            .map_err(|e| WorkspaceError::io(context(), e))?;
        if let Some(hook) = settings.hook {
            hook(path, attempt);
        }
        let after = file
            .metadata()
            .map_err(|e| WorkspaceError::io(context(), e))?;
        let on_path = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| FileStamp::of(&m));
        let unchanged = FileStamp::of(&after) == before
            && on_path == Some(before)
            && content.size == before.size;
        if unchanged {
            return Ok(ReadOutcome::Read(FileRead {
                stamp: before,
                executable: is_executable(&meta),
                content,
                attempts: attempt,
            }));
        }
    }
    Err(WorkspaceError::Unstable {
        path: path.to_owned(),
        attempts: settings.max_attempts,
    })
}

/// Opens `path` for reading without following a final symlink, and without blocking should a
/// fifo have taken its place.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    Ok(File::from(fd))
}
