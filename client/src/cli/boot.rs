//! `boot`: heartbeat, hydrate every registered agent, request the dispatches the heartbeat did
//! not bring, print them all.

use super::args::BootArgs;
use super::output::Output;
use super::{show_version, who};
use serde_json::Value;
use stasis_client::boot::{self, AgentOutcome, BootOptions, DispatchRequest, Hydration};
use stasis_client::{Client, Error, exit, town};

pub fn boot(client: &Client, out: &Output, args: BootArgs) -> Result<u8, Error> {
    let container_id = args.container_id.unwrap_or_else(town::new_container_id);
    eprintln!("container_id: {container_id}");
    let options = BootOptions {
        container_id,
        root: args.root,
        progress: !out.quiet,
        chunk_cache: super::snapshot::chunk_cache(&args.cache),
    };
    let report = boot::boot(client, &args.town, &options, &mut |outcome| {
        out.note(&describe_hydration(outcome));
    })?;
    for requested in &report.requested_dispatches {
        out.note(&describe_request(requested));
    }
    for agent in &report.not_needed {
        out.note(&format!(
            "no dispatch for {}/{}: its kilo.db holds its whole conversation",
            agent.rig_id, agent.agent_id
        ));
    }
    out.note(&format!(
        "heartbeat: draining {}, cleared a drain {}, {} agent(s), {} pending dispatch(es), {} requested",
        report.draining,
        report.cleared_drain,
        report.agents.len(),
        report.pending_dispatches.len(),
        report.requested_dispatches.len()
    ));
    out.result(&Value::Array(report.dispatches()))?;
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
            match (s.unchanged, s.transfer) {
                (true, _) => " (already current)".to_owned(),
                (false, Some(transfer)) => format!("; {}", transfer.summary()),
                (false, None) => String::new(),
            }
        ),
        Hydration::NoSnapshot => format!("no snapshot for {who}: it starts fresh"),
        Hydration::Failed(e) => format!("FAILED to hydrate {who}: {e}"),
    }
}

fn describe_request(outcome: &AgentOutcome<DispatchRequest>) -> String {
    let who = who(outcome);
    match &outcome.result {
        DispatchRequest::Dispatched(_) => {
            format!("requested a dispatch for {who}: it ran in another container")
        }
        DispatchRequest::Failed(e) => format!("FAILED to request a dispatch for {who}: {e}"),
    }
}
