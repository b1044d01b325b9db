//! Restoring a workspace from its manifest: verified and atomic.
//!
//! The tree is written into a sibling folder of the target (`.<name>.<random>.stasis-restore`),
//! every chunk checked against its sha256 as it arrives, every file against its own, and the
//! tree as written (paths, kinds, executable bits read back, link targets read back) against
//! the manifest's root hash; the file system is synced once, and only then is the folder
//! renamed into place. A target that holds anything is refused before anything is fetched:
//! a restore never merges. On any failure the sibling folder is removed and the target is
//! as it was.

use std::fs::{OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use stasis_domain::workspace::root_hash::RootHasher;
use stasis_domain::workspace::{
    ChunkRef, ContentHash, ContentHasher, Entry, FileNode, Node, TreeLimits, TreeManifest,
};

use super::error::{WorkspaceError, WorkspaceResult};
use super::stamp::is_executable;
use super::walk::absolute;

/// Where a restore gets a chunk's bytes (the server, a local cache, ...). What it returns is
/// verified; it may cache, since a chunk named by several files is asked for each time.
pub trait ChunkFetcher {
    /// The bytes of `chunk`.
    fn fetch(&mut self, chunk: &ChunkRef) -> crate::Result<Vec<u8>>;
}

impl<F: FnMut(&ChunkRef) -> crate::Result<Vec<u8>>> ChunkFetcher for F {
    fn fetch(&mut self, chunk: &ChunkRef) -> crate::Result<Vec<u8>> {
        self(chunk)
    }
}

/// What a restore wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoreStats {
    /// Regular files.
    pub files: u64,
    /// Directories (the target itself not counted).
    pub dirs: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Bytes written to files.
    pub bytes: u64,
    /// Chunks fetched (a chunk named twice is fetched twice).
    pub chunks_fetched: u64,
}

/// The suffix of a restore's sibling folder, so that a leftover (after a `kill -9`) is
/// recognisable and can be deleted.
pub const RESTORE_SUFFIX: &str = ".stasis-restore";

/// Restores the tree `manifest` describes, whose root hash must be `expected_root`, as the
/// folder `target` (absent or empty).
pub fn restore(
    manifest: &TreeManifest,
    expected_root: &ContentHash,
    target: &Path,
    fetcher: &mut impl ChunkFetcher,
) -> WorkspaceResult<RestoreStats> {
    // The server enforced its limits; here only the rules matter.
    let unlimited = TreeLimits {
        max_total_size: u64::MAX,
        max_entries: u64::MAX,
        max_chunk_refs: u64::MAX,
    };
    let summary = manifest.check(&unlimited)?;
    if summary.root_hash != *expected_root {
        return Err(WorkspaceError::Integrity {
            what: "the workspace manifest's root hash".into(),
            expected: *expected_root,
            actual: summary.root_hash,
        });
    }
    let parent = check_target(target)?;
    let name = target
        .file_name()
        .unwrap_or(target.as_os_str())
        .to_string_lossy();
    let temp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(RESTORE_SUFFIX)
        .permissions(Permissions::from_mode(0o777))
        .tempdir_in(&parent)
        .map_err(|e| WorkspaceError::io(format!("creating a folder in {}", parent.display()), e))?;
    let mut stats = RestoreStats::default();
    let mut written = RootHasher::default();
    for entry in &manifest.entries {
        let as_written = write_entry(temp.path(), entry, fetcher, &mut stats)?;
        written.add(&as_written);
    }
    let actual = written.finish();
    if actual != *expected_root {
        return Err(WorkspaceError::Integrity {
            what: format!("the tree written in {}", temp.path().display()),
            expected: *expected_root,
            actual,
        });
    }
    sync_file_system(temp.path())?;
    let written_dir = temp.keep();
    if let Err(err) = std::fs::rename(&written_dir, target) {
        let _ = std::fs::remove_dir_all(&written_dir);
        let context = format!("renaming the restored tree to {}", target.display());
        return Err(WorkspaceError::io(context, err));
    }
    sync_dir(&parent)?;
    Ok(stats)
}

/// The folder to write beside `target`, once `target` is known to be absent or empty.
fn check_target(target: &Path) -> WorkspaceResult<PathBuf> {
    let refused = |detail: &str| WorkspaceError::TargetNotEmpty {
        path: target.to_owned(),
        detail: detail.to_owned(),
    };
    let context = || format!("inspecting the restore target {}", target.display());
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            let mut names =
                std::fs::read_dir(target).map_err(|e| WorkspaceError::io(context(), e))?;
            if names.next().is_some() {
                return Err(refused("the folder is not empty"));
            }
        }
        Ok(_) => return Err(refused("it is not a folder")),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(WorkspaceError::io(context(), err)),
    }
    let parent = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)
        .map_err(|e| WorkspaceError::io(format!("creating {}", parent.display()), e))?;
    Ok(parent)
}

/// Writes one entry under `root`; the entry as it now is on disk.
fn write_entry(
    root: &Path,
    entry: &Entry,
    fetcher: &mut impl ChunkFetcher,
    stats: &mut RestoreStats,
) -> WorkspaceResult<Entry> {
    let path = absolute(root, entry.path.as_bytes());
    let context = || format!("restoring {}", path.display());
    let node = match &entry.node {
        Node::Dir => {
            std::fs::create_dir(&path).map_err(|e| WorkspaceError::io(context(), e))?;
            stats.dirs += 1;
            Node::Dir
        }
        Node::Symlink { target } => {
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &path)
                .map_err(|e| WorkspaceError::io(context(), e))?;
            let back = std::fs::read_link(&path).map_err(|e| WorkspaceError::io(context(), e))?;
            stats.symlinks += 1;
            Node::Symlink {
                target: back.as_os_str().as_bytes().to_vec(),
            }
        }
        Node::File(file) => Node::File(write_file(&path, file, fetcher, stats)?),
    };
    Ok(Entry {
        path: entry.path.clone(),
        node,
    })
}

/// Writes a file from its chunks, each verified, then the whole; the file as written.
fn write_file(
    path: &Path,
    file: &FileNode,
    fetcher: &mut impl ChunkFetcher,
    stats: &mut RestoreStats,
) -> WorkspaceResult<FileNode> {
    let context = || format!("restoring {}", path.display());
    // The umask applies, as for git's checkout; the owner's bit is fixed below if it hid it.
    let mode = if file.executable { 0o777 } else { 0o666 };
    let mut out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| WorkspaceError::io(context(), e))?;
    let mut whole = ContentHasher::default();
    let mut size = 0u64;
    for chunk in &file.chunks {
        let bytes = fetcher.fetch(chunk).map_err(|err| WorkspaceError::Fetch {
            hash: chunk.sha256,
            source: Box::new(err),
        })?;
        stats.chunks_fetched += 1;
        let actual = ContentHash::of(&bytes);
        if actual != chunk.sha256 || bytes.len() != chunk.size as usize {
            return Err(WorkspaceError::Integrity {
                what: format!("a chunk of {} ({} bytes)", path.display(), bytes.len()),
                expected: chunk.sha256,
                actual,
            });
        }
        whole.update(&bytes);
        out.write_all(&bytes)
            .map_err(|e| WorkspaceError::io(context(), e))?;
        size += bytes.len() as u64;
    }
    let sha256 = whole.finish();
    if sha256 != file.sha256 {
        return Err(WorkspaceError::Integrity {
            what: format!("{}", path.display()),
            expected: file.sha256,
            actual: sha256,
        });
    }
    let meta = out
        .metadata()
        .map_err(|e| WorkspaceError::io(context(), e))?;
    let mut executable = is_executable(&meta);
    if executable != file.executable {
        let fixed = Permissions::from_mode((meta.permissions().mode() ^ 0o100) & 0o7777);
        out.set_permissions(fixed)
            .map_err(|e| WorkspaceError::io(context(), e))?;
        executable = file.executable;
    }
    stats.files += 1;
    stats.bytes += size;
    Ok(FileNode {
        executable,
        size,
        sha256,
        chunks: Vec::new(),
    })
}

/// Makes everything written under `dir` durable at once (one `syncfs`, not one fsync a file).
fn sync_file_system(dir: &Path) -> WorkspaceResult<()> {
    let context = || format!("syncing {}", dir.display());
    let handle = std::fs::File::open(dir).map_err(|e| WorkspaceError::io(context(), e))?;
    rustix::fs::syncfs(&handle).map_err(|e| WorkspaceError::io(context(), e.into()))
}

/// Fsyncs a folder so that a rename in it survives a crash.
fn sync_dir(dir: &Path) -> WorkspaceResult<()> {
    let context = || format!("syncing {}", dir.display());
    let handle = std::fs::File::open(dir).map_err(|e| WorkspaceError::io(context(), e))?;
    handle
        .sync_all()
        .map_err(|e| WorkspaceError::io(context(), e))
}
