//! `drain`: post the eviction, then flush every agent within the budget.

use super::args::DrainArgs;
use super::output::Output;
use super::who;
use serde_json::{Value, json};
use stasis_client::boot::AgentOutcome;
use stasis_client::drain::{self, DrainOptions, Flush};
use stasis_client::{Client, Error, exit};

pub fn drain(client: &Client, out: &Output, args: DrainArgs) -> Result<u8, Error> {
    let options = DrainOptions {
        container_id: args.container_id,
        root: args.root,
        budget: args.budget,
        reason: args.reason,
        parallel: usize::from(args.parallel),
    };
    let report = drain::drain(client, &args.town, &options, &|outcome| {
        out.note(&describe_flush(outcome));
    })?;
    if let Some(e) = &report.eviction_error {
        eprintln!("the eviction notice failed (snapshots were flushed regardless): {e}");
    }
    let agents: Vec<Value> = report.agents.iter().map(flush_json).collect();
    out.note(&format!("drain finished in {:.1?}", report.elapsed));
    out.result(&json!({
        "eviction_recorded": report.eviction_error.is_none(),
        "eviction_error": report.eviction_error.as_ref().map(ToString::to_string),
        "fenced": report.fenced.as_ref().map(ToString::to_string),
        "elapsed_ms": u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
        "agents": agents,
    }))?;
    if let Some(fenced) = report.fenced {
        return Err(fenced);
    }
    Ok(if report.complete() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

fn describe_flush(outcome: &AgentOutcome<Flush>) -> String {
    let who = who(outcome);
    match &outcome.result {
        Flush::Flushed(r) => format!(
            "flushed {who}: version {}, {} bytes, stored {}",
            r.version,
            r.size,
            r.storage.as_deref().unwrap_or("(as before)")
        ),
        Flush::NoLocalDb => format!("nothing to flush for {who}: no {}", outcome.path.display()),
        Flush::OutOfTime => format!("NOT FLUSHED {who}: the budget ran out"),
        Flush::Fenced => format!("NOT FLUSHED {who}: this container is fenced"),
        Flush::Failed(e) => format!("FAILED to flush {who}: {e}"),
    }
}

fn flush_json(outcome: &AgentOutcome<Flush>) -> Value {
    let mut value = json!({
        "agent_id": outcome.agent.agent_id,
        "rig_id": outcome.agent.rig_id,
        "role": outcome.agent.role,
        "path": outcome.path,
    });
    let (status, extra) = match &outcome.result {
        Flush::Flushed(receipt) => ("flushed", json!({ "receipt": receipt })),
        Flush::NoLocalDb => ("no_local_db", json!({})),
        Flush::OutOfTime => ("out_of_time", json!({})),
        Flush::Fenced => ("fenced", json!({})),
        Flush::Failed(e) => ("failed", json!({ "error": e.to_string() })),
    };
    value["status"] = json!(status);
    if let (Some(map), Value::Object(extra)) = (value.as_object_mut(), extra) {
        map.extend(extra);
    }
    value
}
