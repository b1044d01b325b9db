//! `restore`: an agent's kilo.db, workspace, checkpoint and memory back to a
//! point (`POST .../restore`), and its undo (`--pin` the answer's
//! `undo.pin`).

use super::agent_ref;
use super::args::AgentArgs;
use super::output::Output;
use clap::{ArgGroup, Args};
use serde::Serialize;
use serde_json::Value;
use stasis_client::{Client, Error, exit};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("point").required(true).args(["seq", "at", "version", "pin"])))]
pub struct RestoreArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
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

#[derive(Serialize)]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pin: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    fence: bool,
}

/// Sends the restore once (a retry after a lost answer would restore
/// twice, and its undo handle would name the first restore's state).
pub fn restore(client: &Client, out: &Output, args: RestoreArgs) -> Result<u8, Error> {
    let agent = agent_ref(&args.agent)?;
    let body = Body {
        seq: args.seq,
        at: args.at,
        kind: args.kind.as_deref(),
        version: args.version,
        key: args.key.as_deref(),
        pin: args.pin.as_deref(),
        fence: args.fence,
    };
    let restored: Value = client.post_json_single(&agent.path("/restore"), &body, None)?;
    out.note(&format!(
        "restored {agent} to seq {} (event {}); undo: --pin {}",
        restored["point_seq"], restored["seq"], restored["undo"]["pin"]
    ));
    out.result(&restored)?;
    Ok(exit::OK)
}
