//! The arguments of `restore` (the agent flags repeated, as `workspace_args` does, so that
//! `args` and the command's file do not use each other).

use clap::{ArgGroup, Args};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("point").required(true).args(["seq", "at", "version", "pin"])))]
pub struct RestoreArgs {
    /// Town id.
    #[arg(long)]
    pub town: String,
    /// Rig id.
    #[arg(long)]
    pub rig: String,
    /// Agent id.
    #[arg(long)]
    pub agent: String,
    /// Restore to this seq of the agent's log.
    #[arg(long)]
    pub seq: Option<u64>,
    /// Restore to this time, ms since the epoch.
    #[arg(long)]
    pub at: Option<i64>,
    /// Restore to the moment this version of --kind was written.
    #[arg(long, requires = "kind")]
    pub version: Option<u64>,
    /// The kind of --version: db_snapshot, workspace, checkpoint or memory.
    #[arg(long, requires = "version")]
    pub kind: Option<String>,
    /// The memory key --version belongs to (with --kind memory).
    #[arg(long, requires = "version")]
    pub key: Option<String>,
    /// Restore to this pin's seq; a restore's `undo.pin` undoes it.
    #[arg(long)]
    pub pin: Option<String>,
    /// Restore even though a live container holds the agent: fence it first.
    #[arg(long)]
    pub fence: bool,
}
