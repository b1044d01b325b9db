//! The agent's line in the town's process registry (which container runs it, its session, its
//! port). The per-agent upsert (`PUT /api/towns/{town}/container-registry/agents/{rig}/{agent}`)
//! touches that line only; against a server without it, the whole registry is read, the line
//! replaced and the registry written back, under a lock file shared by the container's
//! supervisors, so that two of them never clobber each other's line.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::{AgentRef, town_path};
use crate::town::{self, RegisteredAgent};

/// How long one registry update may take.
const BUDGET: Duration = Duration::from_secs(20);

/// Records `entry` as run by `container_id`. `root` holds the container's lock file.
pub(crate) fn record(
    client: &Client,
    town: &str,
    container_id: &str,
    root: &Path,
    entry: &RegisteredAgent,
) -> Result<()> {
    let deadline = Instant::now() + BUDGET;
    let path = format!(
        "{}/container-registry/agents/{}/{}",
        town_path(town)?,
        entry.rig_id,
        entry.agent_id
    );
    let body = json!({
        "container_id": container_id,
        "role": entry.role,
        "session_id": entry.session_id,
        "port": entry.port,
    });
    match client.put_json::<serde_json::Value>(&path, &body, Some(deadline)) {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.status(), Some(400 | 404 | 405)) => {
            read_modify_write(client, town, container_id, root, entry, deadline)
        }
        Err(e) => Err(e),
    }
}

/// Registers `agent` with `role` unless stasis knows it already (a dispatch needs a registered
/// agent; its record, metadata included, is left as it is when there is one).
pub(crate) fn ensure_agent(client: &Client, agent: &AgentRef, role: &str) -> Result<()> {
    let deadline = Instant::now() + BUDGET;
    match client.get_json::<serde_json::Value>(&agent.path(""), Some(deadline)) {
        Ok(_) => Ok(()),
        Err(e) if e.status() == Some(404) => client
            .put_json::<serde_json::Value>(
                &agent.path(""),
                &json!({ "role": role }),
                Some(deadline),
            )
            .map(drop),
        Err(e) => Err(e),
    }
}

/// The whole-registry fallback, under `{root}/stasis-registry.lock`.
fn read_modify_write(
    client: &Client,
    town: &str,
    container_id: &str,
    root: &Path,
    entry: &RegisteredAgent,
    deadline: Instant,
) -> Result<()> {
    let lock_path = root.join("stasis-registry.lock");
    let lock = File::create(&lock_path)
        .map_err(|e| Error::io(format!("creating {}", lock_path.display()), e))?;
    lock.lock()
        .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    let registry = town::registry(client, town, Some(deadline))?;
    let agents = upserted(registry.agents, entry);
    town::put_registry(client, town, container_id, &agents, Some(deadline))?;
    drop(lock);
    Ok(())
}

/// `agents` with `entry` in place of the line of the same rig and agent (or added at the end).
fn upserted(mut agents: Vec<RegisteredAgent>, entry: &RegisteredAgent) -> Vec<RegisteredAgent> {
    let same = |a: &RegisteredAgent| a.agent_id == entry.agent_id && a.rig_id == entry.rig_id;
    match agents.iter_mut().find(|a| same(a)) {
        Some(line) => *line = entry.clone(),
        None => agents.push(entry.clone()),
    }
    agents
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str, port: Option<u16>) -> RegisteredAgent {
        RegisteredAgent {
            agent_id: id.into(),
            rig_id: "hq".into(),
            role: "polecat".into(),
            session_id: None,
            port,
        }
    }

    #[test]
    fn an_upsert_replaces_only_its_own_line() {
        let before = vec![agent("mayor", Some(1)), agent("p1", Some(2))];
        let after = upserted(before, &agent("p1", Some(3)));
        assert_eq!(after, vec![agent("mayor", Some(1)), agent("p1", Some(3))]);
        let added = upserted(after, &agent("p2", None));
        assert_eq!(added.len(), 3);
    }
}
