//! The arguments of `workspace push` and `workspace pull`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Save a working folder (a git worktree, say) as the agent's workspace: only what changed.
    ///
    /// Scans --dir: every entry (folders, empty ones too; files with their executable bit;
    /// symlinks as links, never followed; `.git` included), minus what git ignores there
    /// (its .gitignore files and .git/info/exclude; --no-gitignore keeps everything) and
    /// --exclude, plus --include. A file is read only when the local index does not vouch
    /// for it (same path, size, mtime, ctime and inode); one that changes while it is read is
    /// read again, never stored torn. Files are cut into content-defined chunks (FastCDC,
    /// 16/64/256 KiB), named by sha256. When the tree's root hash is the one last pushed or
    /// pulled from here, nothing is sent. Else: asks which chunks and manifest pages the
    /// agent's store lacks (32,768 names per call), uploads those (8 at a time), and commits
    /// the manifest with If-Match of the last synced root hash (If-None-Match: * the first
    /// time); a 412 (another push came first) reads the current version and commits once
    /// more against it. Prints the stored version and what was sent as JSON on stdout.
    Push(WorkspacePushArgs),

    /// Restore the agent's workspace into an absent or empty folder, verified and atomically.
    ///
    /// Reads the current version's manifest and its pages, then writes the tree into a sibling
    /// folder (.NAME.XXXX.stasis-restore) while the chunks are fetched ahead (8 at a time),
    /// each checked against its sha256, every file against its own and the whole tree
    /// (paths, kinds, executable bits, link targets) against the root hash; syncs, and only
    /// then renames it to --dir. A folder that holds anything is refused (exit code 1) before
    /// anything is fetched: a restore never merges. A failed pull leaves no folder behind.
    /// Exit code 3 when the agent has no workspace (nothing written).
    Pull(WorkspacePullArgs),
}

/// Whose workspace (the same flags as every command's `--town --rig --agent`).
#[derive(Debug, Args)]
pub struct WorkspaceAgent {
    /// Town id.
    #[arg(long)]
    pub town: String,
    /// Rig id.
    #[arg(long)]
    pub rig: String,
    /// Agent id.
    #[arg(long)]
    pub agent: String,
}

/// Where a workspace's local state lives.
#[derive(Debug, Args)]
pub struct StateArgs {
    /// Where the last pushed or pulled version and the scan's index are kept
    /// [default: the folder's sibling .NAME.stasis-workspace].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WorkspacePushArgs {
    #[command(flatten)]
    pub agent: WorkspaceAgent,
    /// The folder to save.
    #[arg(long)]
    pub dir: PathBuf,
    /// Leave out what matches, in gitignore syntax relative to --dir (repeatable), e.g.
    /// '*.log', '/tmp/'.
    #[arg(long = "exclude", value_name = "GLOB")]
    pub excludes: Vec<String>,
    /// Keep what matches although git ignores it (repeatable), e.g. 'node_modules/'.
    #[arg(long = "include", value_name = "GLOB")]
    pub includes: Vec<String>,
    /// Keep what git ignores too.
    #[arg(long)]
    pub no_gitignore: bool,
    /// Event watermark to store with the version [default: the agent's last seq].
    #[arg(long)]
    pub event_seq: Option<u64>,
    #[command(flatten)]
    pub state: StateArgs,
}

#[derive(Debug, Args)]
pub struct WorkspacePullArgs {
    #[command(flatten)]
    pub agent: WorkspaceAgent,
    /// The folder to restore into: absent or empty.
    #[arg(long)]
    pub dir: PathBuf,
    #[command(flatten)]
    pub state: StateArgs,
}
