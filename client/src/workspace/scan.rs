//! A scan: a workspace folder's tree manifest, what a push needs to send it (the chunks a
//! store lacks, and where to read each), and the counts of what was read, reused and skipped.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use stasis_domain::workspace::{
    ChunkParams, ContentHash, Entry, EntryPath, FileNode, Node, TreeLimits, TreeManifest,
    TreeSummary,
};

use super::chunk_locations::ChunkLocations;
use super::chunker::Chunker;
use super::consistent_read::{ReadHook, ReadOutcome, ReadSettings, read_consistently};
use super::error::{WorkspaceError, WorkspaceResult};
use super::index::{Index, IndexRecord};
use super::stamp::{FileStamp, is_executable};
use super::stat_ahead::{self, Stat};
use super::walk::{WalkRules, WalkedKind, absolute};
use crate::atomic_write::TEMP_SUFFIX;

/// How a folder is scanned.
#[derive(Clone)]
pub struct ScanOptions {
    /// How files are cut: a workspace's first version picks them, later ones reuse the
    /// manifest's (see [`ChunkParams::default`] for why these defaults).
    pub chunking: ChunkParams,
    /// Leave out what git ignores when the folder is in a git worktree.
    pub gitignore: bool,
    /// More to leave out, in gitignore syntax relative to the folder (e.g. `*.log`, `/tmp/`).
    pub excludes: Vec<String>,
    /// What to keep although git ignores it, in gitignore syntax (e.g. `node_modules/`).
    pub includes: Vec<String>,
    /// Where the local index lives; `None` reads every file. Inside the folder, it is left out
    /// of the tree.
    pub index_path: Option<PathBuf>,
    /// How many times a file that keeps changing is read before the scan gives up.
    pub max_read_attempts: u32,
    /// The file system's timestamp granularity, at most: a file changed less than this before
    /// its read waits it out (see [`super::consistent_read`]).
    pub timestamp_tick: Duration,
    /// The limits the manifest must meet.
    pub limits: TreeLimits,
    /// Called after each read of a file, before its second stamp (`(path, attempt)`): for
    /// progress, and for tests that change a file mid-read.
    pub after_read: Option<ReadHook>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            chunking: ChunkParams::default(),
            gitignore: true,
            excludes: Vec::new(),
            includes: Vec::new(),
            index_path: None,
            max_read_attempts: 5,
            // Linux stamps files from a coarse clock: one jiffy, at most 10 ms.
            timestamp_tick: Duration::from_millis(50),
            limits: TreeLimits::default(),
            after_read: None,
        }
    }
}

impl std::fmt::Debug for ScanOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanOptions")
            .field("chunking", &self.chunking)
            .field("gitignore", &self.gitignore)
            .field("excludes", &self.excludes)
            .field("includes", &self.includes)
            .field("index_path", &self.index_path)
            .finish_non_exhaustive()
    }
}

/// What a scan did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Files read (and chunked).
    pub files_read: u64,
    /// Files whose index record was still good: not read.
    pub files_reused: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Reads repeated because the file changed while it was read.
    pub rereads: u64,
    /// Fifos, sockets and devices left out.
    pub special_skipped: u64,
    /// Entries deleted while the scan ran, left out.
    pub vanished: u64,
    /// Why the index could not be used, when it could not.
    pub index_discarded: Option<String>,
}

/// A scanned folder.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Its tree manifest, checked.
    pub manifest: TreeManifest,
    /// What the manifest holds, with its root hash.
    pub summary: TreeSummary,
    /// Where each chunk can be read.
    pub chunks: ChunkLocations,
    /// What the scan did.
    pub stats: ScanStats,
}

impl Scan {
    /// The chunks a store holding `known` lacks, once each, in manifest order.
    pub fn new_chunks(&self, known: &HashSet<ContentHash>) -> Vec<ContentHash> {
        let mut chunks = self.manifest.unique_chunks();
        chunks.retain(|hash| !known.contains(hash));
        chunks
    }

    /// A chunk's bytes, read from the scanned files and verified.
    pub fn read_chunk(&self, hash: &ContentHash) -> WorkspaceResult<Vec<u8>> {
        self.chunks.read(hash)
    }
}

/// Scans the folder `root` into a tree manifest, reading only the files the index does not
/// vouch for, and then updates the index.
pub fn scan(root: &Path, options: &ScanOptions) -> WorkspaceResult<Scan> {
    let meta = std::fs::symlink_metadata(root)
        .map_err(|e| WorkspaceError::io(format!("scanning {}", root.display()), e))?;
    if !meta.is_dir() {
        let not_dir = std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory");
        return Err(WorkspaceError::io(
            format!("scanning {}", root.display()),
            not_dir,
        ));
    }
    let chunker = Chunker::new(&options.chunking)?;
    let (old_index, index_discarded) = match &options.index_path {
        Some(path) => Index::load(path, &options.chunking),
        None => (Index::default(), None),
    };
    let rules = WalkRules::new(
        root,
        options.gitignore,
        &options.excludes,
        &options.includes,
    )?;
    let listing = rules.list(root)?;
    let settings = ReadSettings {
        chunker: &chunker,
        max_attempts: options.max_read_attempts.max(1),
        tick: options.timestamp_tick,
        hook: options.after_read.as_ref(),
    };
    let mut builder = Builder {
        root,
        settings,
        old_index: &old_index,
        new_index: Index::default(),
        entries: Vec::with_capacity(listing.entries.len()),
        chunks: ChunkLocations::default(),
        stats: ScanStats {
            vanished: listing.vanished,
            index_discarded,
            ..ScanStats::default()
        },
    };
    let own_index = options
        .index_path
        .as_deref()
        .and_then(|path| OwnIndex::under(root, path));
    let listed: Vec<(Vec<u8>, WalkedKind)> = listing
        .entries
        .into_iter()
        .filter(|(rel, _)| !own_index.as_ref().is_some_and(|own| own.is_it(rel)))
        .collect();
    let stats = stat_ahead::stat_files(root, &listed);
    for ((rel, kind), stat) in listed.into_iter().zip(stats) {
        builder.add(rel, kind, stat)?;
    }
    let manifest = TreeManifest::new(options.chunking.clone(), builder.entries);
    let summary = manifest.check(&options.limits)?;
    // Nothing read and as many records as before: every record came from the old index
    // unchanged, so the file on disk is already this one (a save every few seconds of an
    // unchanged tree writes nothing).
    let unchanged = builder.stats.files_read == 0
        && builder.stats.index_discarded.is_none()
        && builder.new_index.len() == old_index.len();
    if let Some(path) = &options.index_path
        && !unchanged
    {
        builder.new_index.save(path, &options.chunking)?;
    }
    Ok(Scan {
        manifest,
        summary,
        chunks: builder.chunks,
        stats: builder.stats,
    })
}

/// A scan in progress.
struct Builder<'a> {
    root: &'a Path,
    settings: ReadSettings<'a>,
    old_index: &'a Index,
    new_index: Index,
    entries: Vec<Entry>,
    chunks: ChunkLocations,
    stats: ScanStats,
}

impl Builder<'_> {
    fn add(&mut self, rel: Vec<u8>, kind: WalkedKind, stat: Stat) -> WorkspaceResult<()> {
        let path = absolute(self.root, &rel);
        match kind {
            WalkedKind::Dir => self.entries.push(Entry::dir(rel)),
            WalkedKind::Special => self.stats.special_skipped += 1,
            WalkedKind::Symlink => match std::fs::read_link(&path) {
                Ok(target) => {
                    let target = target.as_os_str().as_bytes().to_vec();
                    self.entries.push(Entry::symlink(rel, target));
                }
                Err(err) if vanished(&err) => self.stats.vanished += 1,
                Err(err) => {
                    let context = format!("reading the link {}", path.display());
                    return Err(WorkspaceError::io(context, err));
                }
            },
            WalkedKind::File => {
                let stat = stat.unwrap_or_else(|| std::fs::symlink_metadata(&path));
                self.add_file(rel, path, stat)?;
            }
        }
        Ok(())
    }

    fn add_file(
        &mut self,
        rel: Vec<u8>,
        path: PathBuf,
        stat: std::io::Result<std::fs::Metadata>,
    ) -> WorkspaceResult<()> {
        let meta = match stat {
            Ok(meta) => meta,
            Err(err) if vanished(&err) => {
                self.stats.vanished += 1;
                return Ok(());
            }
            Err(err) => {
                return Err(WorkspaceError::io(
                    format!("reading {}", path.display()),
                    err,
                ));
            }
        };
        let stamp = FileStamp::of(&meta);
        if meta.is_file()
            && let Some(record) = self.old_index.lookup(&rel, &stamp)
        {
            self.stats.files_reused += 1;
            let record = record.clone();
            self.push_file(rel, path, is_executable(&meta), record);
            return Ok(());
        }
        match read_consistently(&path, &self.settings)? {
            ReadOutcome::Read(read) => {
                self.stats.files_read += 1;
                self.stats.bytes_read += read.content.size * u64::from(read.attempts);
                self.stats.rereads += u64::from(read.attempts - 1);
                let record = IndexRecord {
                    stamp: read.stamp,
                    sha256: read.content.sha256,
                    chunks: read.content.chunks,
                };
                self.push_file(rel, path, read.executable, record);
            }
            ReadOutcome::Vanished => self.stats.vanished += 1,
            ReadOutcome::NotRegular => self.stats.vanished += 1,
        }
        Ok(())
    }

    fn push_file(&mut self, rel: Vec<u8>, path: PathBuf, executable: bool, record: IndexRecord) {
        self.chunks.add_file(path, &record.chunks);
        self.entries.push(Entry {
            path: EntryPath::new(rel.clone()),
            node: Node::File(FileNode {
                executable,
                size: record.stamp.size,
                sha256: record.sha256,
                chunks: record.chunks.clone(),
            }),
        });
        self.new_index.insert(rel, record);
    }
}

/// The index file (and its temporary files) when it lies inside the scanned folder: never part
/// of the tree, or every scan would find it changed.
struct OwnIndex {
    rel: Vec<u8>,
    temp_prefix: Vec<u8>,
}

impl OwnIndex {
    fn under(root: &Path, index: &Path) -> Option<Self> {
        let rel = index
            .strip_prefix(root)
            .ok()?
            .as_os_str()
            .as_bytes()
            .to_vec();
        let name = index.file_name()?.as_bytes();
        let dir_len = rel.len().saturating_sub(name.len());
        let mut temp_prefix = rel[..dir_len].to_vec();
        temp_prefix.push(b'.');
        temp_prefix.extend_from_slice(name);
        temp_prefix.push(b'.');
        Some(Self { rel, temp_prefix })
    }

    fn is_it(&self, rel: &[u8]) -> bool {
        rel == self.rel.as_slice()
            || (rel.starts_with(&self.temp_prefix) && rel.ends_with(TEMP_SUFFIX.as_bytes()))
    }
}

fn vanished(err: &std::io::Error) -> bool {
    err.kind() == std::io::ErrorKind::NotFound
}
