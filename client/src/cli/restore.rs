//! `restore`: an agent's kilo.db, workspace, checkpoint and memory back to a
//! point (`POST .../restore`), and its undo (`--pin` the answer's
//! `undo.pin`).

use super::output::Output;
use super::restore_args::RestoreArgs;
use serde::Serialize;
use serde_json::Value;
use stasis_client::{AgentRef, Client, Error, exit};

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
    let agent = AgentRef::new(&args.town, &args.rig, &args.agent)?;
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
        restored["point_seq"],
        restored["seq"],
        restored["undo"]["pin"].as_str().unwrap_or("?")
    ));
    out.result(&restored)?;
    Ok(exit::OK)
}
