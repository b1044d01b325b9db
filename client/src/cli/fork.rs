//! `fork`: a new agent of the same town from an agent's state at a point.

use super::agent_ref;
use super::args::ForkArgs;
use super::output::Output;
use serde_json::{Value, json};
use stasis_client::{Client, Error, exit};

pub fn fork(client: &Client, out: &Output, args: ForkArgs) -> Result<u8, Error> {
    let source = agent_ref(&args.agent)?;
    let point = match (args.seq, args.at, args.kind, args.version) {
        (Some(seq), None, None, None) => json!({ "seq": seq }),
        (None, Some(at), None, None) => json!({ "at": at }),
        (None, None, Some(kind), Some(version)) => json!({ "kind": kind, "version": version }),
        _ => {
            return Err(Error::Config(
                "give exactly one point: --seq, --at, or --kind with --version".into(),
            ));
        }
    };
    let mut body = json!({ "point": point, "agent": args.to_agent });
    if let Some(rig) = &args.to_rig {
        body["rig"] = json!(rig);
    }
    if let Some(role) = &args.role {
        body["role"] = json!(role);
    }
    let record: Value = client.post_json(&source.path("/fork"), &body, None)?;
    out.note(&format!(
        "forked {source} at seq {} into {} (rig {})",
        record["forked_from"]["seq"], record["agent_id"], record["rig_id"]
    ));
    out.result(&record)?;
    Ok(exit::OK)
}
