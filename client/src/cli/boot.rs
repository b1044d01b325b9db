//! `boot`: heartbeat, hydrate every registered agent, print the dispatches.

use super::args::BootArgs;
use super::output::Output;
use super::{show_version, who};
use serde_json::Value;
use stasis_client::boot::{self, AgentOutcome, BootOptions, Hydration};
use stasis_client::{Client, Error, exit, town};

pub fn boot(client: &Client, out: &Output, args: BootArgs) -> Result<u8, Error> {
    let container_id = args.container_id.unwrap_or_else(town::new_container_id);
    eprintln!("container_id: {container_id}");
    let options = BootOptions {
        container_id,
        root: args.root,
        progress: !out.quiet,
    };
    let report = boot::boot(client, &args.town, &options, &mut |outcome| {
        out.note(&describe_hydration(outcome));
    })?;
    out.note(&format!(
        "heartbeat: draining {}, cleared a drain {}, {} agent(s), {} pending dispatch(es)",
        report.draining,
        report.cleared_drain,
        report.agents.len(),
        report.pending_dispatches.len()
    ));
    out.result(&Value::Array(report.pending_dispatches.clone()))?;
    Ok(if report.complete() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

fn describe_hydration(outcome: &AgentOutcome<Hydration>) -> String {
    let who = who(outcome);
    match &outcome.result {
        Hydration::Pulled(s) => format!(
            "hydrated {who} -> {}: version {}, {} bytes{}",
            outcome.path.display(),
            show_version(s.version),
            s.size,
            if s.unchanged {
                " (already current)"
            } else {
                ""
            }
        ),
        Hydration::NoSnapshot => format!("no snapshot for {who}: it starts fresh"),
        Hydration::Failed(e) => format!("FAILED to hydrate {who}: {e}"),
    }
}
