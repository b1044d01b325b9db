//! The command line's pieces: its arguments, its output, and one file per
//! command; the helpers they share are here.

pub mod args;
pub mod boot;
pub mod drain;
pub mod fork;
pub mod output;
pub mod restore;
pub mod restore_args;
pub mod sidecar;
pub mod sidecar_args;
pub mod snapshot;
pub mod supervise;
pub mod supervise_args;
pub mod tail;
pub mod workspace;
pub mod workspace_args;

use std::time::Duration;

use args::AgentArgs;
use stasis_client::boot::AgentOutcome;
use stasis_client::{AgentRef, Error};

/// A time budget on the command line (`10m`, `90s`, `1h30m`), as clap's value parser.
fn parse_budget(text: &str) -> Result<Duration, String> {
    stasis_client::config::parse_duration(text).map_err(|e| e.to_string())
}

fn agent_ref(args: &AgentArgs) -> Result<AgentRef, Error> {
    AgentRef::new(&args.town, &args.rig, &args.agent)
}

fn who<R>(outcome: &AgentOutcome<R>) -> String {
    let agent = &outcome.agent;
    if agent.role.is_empty() {
        format!("{} (rig {})", agent.agent_id, agent.rig_id)
    } else {
        format!("{} ({}, rig {})", agent.agent_id, agent.role, agent.rig_id)
    }
}

fn show_version(version: Option<u64>) -> String {
    version.map_or_else(|| "?".to_owned(), |v| v.to_string())
}
