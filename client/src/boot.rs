//! Boot: take a container token, heartbeat, then hydrate every registered agent's kilo.db, then
//! hand over the pending dispatches.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::credentials::token_file;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::snapshot::{self, PullOptions, PullOutcome, PulledSnapshot};
use crate::town::{self, RegisteredAgent};

/// An agent's home: `{root}/agent-home-{agent}` (its `KILO_TEST_HOME`).
pub fn agent_home(root: &Path, agent_id: &str) -> PathBuf {
    root.join(format!("agent-home-{agent_id}"))
}

/// An agent's kilo.db: `{root}/agent-home-{agent}/.local/share/kilo/kilo.db`.
pub fn kilo_db_path(root: &Path, agent_id: &str) -> PathBuf {
    agent_home(root, agent_id).join(".local/share/kilo/kilo.db")
}

/// The result of one agent's step in a boot or a drain.
#[derive(Debug)]
pub struct AgentOutcome<R> {
    /// The agent, as the registry has it.
    pub agent: RegisteredAgent,
    /// Its kilo.db path.
    pub path: PathBuf,
    /// What happened.
    pub result: R,
}

/// What hydrating one agent did.
#[derive(Debug)]
pub enum Hydration {
    /// The snapshot is in place.
    Pulled(PulledSnapshot),
    /// The server has no snapshot for it (a fresh agent); nothing was written.
    NoSnapshot,
    /// It failed.
    Failed(Error),
}

/// How a boot proceeds.
#[derive(Debug, Clone)]
pub struct BootOptions {
    /// This container's id (see [`town::new_container_id`]).
    pub container_id: String,
    /// Where agent homes live (`/tmp` in a container).
    pub root: PathBuf,
    /// Show progress bars (on a terminal only).
    pub progress: bool,
}

/// What a boot did.
#[derive(Debug)]
pub struct BootReport {
    /// This container's id.
    pub container_id: String,
    /// Whether the town still drains after the heartbeat (a dying container's late heartbeat).
    pub draining: bool,
    /// Whether this heartbeat ended a drain.
    pub cleared_drain: bool,
    /// One outcome per registered agent, in registry order.
    pub agents: Vec<AgentOutcome<Hydration>>,
    /// The dispatches to run, as the server sent them.
    pub pending_dispatches: Vec<Value>,
}

impl BootReport {
    /// True when no agent failed to hydrate.
    pub fn complete(&self) -> bool {
        self.agents
            .iter()
            .all(|a| !matches!(a.result, Hydration::Failed(_)))
    }
}

/// Binds the client to `options.container_id` (a container token, shared with the container's
/// sidecars and drain through [`token_file`] under `options.root`), heartbeats `town` as that
/// container, then pulls each registered agent's snapshot into [`kilo_db_path`], calling
/// `on_agent` after each. An agent that fails does not stop the others; a failed heartbeat
/// fails the boot, and so does one that finds this container fenced ([`Error::Superseded`]).
pub fn boot(
    client: &Client,
    town: &str,
    options: &BootOptions,
    on_agent: &mut dyn FnMut(&AgentOutcome<Hydration>),
) -> Result<BootReport> {
    let ours = &options.container_id;
    crate::ids::check_id("container", ours)?;
    client.bind_container(town, ours, Some(&token_file(&options.root, ours)))?;
    let beat = town::heartbeat(client, town, ours, None)?;
    if beat.fenced {
        return Err(Error::Superseded {
            ours: ours.clone(),
            current: beat.current_container_id.unwrap_or_default(),
        });
    }
    let registry = beat.registry.unwrap_or_default();
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut agents = Vec::with_capacity(registry.agents.len());
    for agent in registry.agents {
        let path = kilo_db_path(&options.root, &agent.agent_id);
        let result = match seen.insert(agent.agent_id.clone(), agent.rig_id.clone()) {
            Some(other_rig) => Hydration::Failed(Error::Protocol {
                what: "the container registry".into(),
                detail: format!(
                    "agent {} is registered in rigs {other_rig} and {}; both would use {}",
                    agent.agent_id,
                    agent.rig_id,
                    path.display()
                ),
            }),
            None => hydrate(client, town, &agent, &path, options.progress),
        };
        let outcome = AgentOutcome {
            agent,
            path,
            result,
        };
        on_agent(&outcome);
        agents.push(outcome);
    }
    Ok(BootReport {
        container_id: options.container_id.clone(),
        draining: beat.draining,
        cleared_drain: beat.cleared_drain,
        agents,
        pending_dispatches: beat.pending_dispatches,
    })
}

fn hydrate(
    client: &Client,
    town: &str,
    agent: &RegisteredAgent,
    path: &Path,
    progress: bool,
) -> Hydration {
    let pulled = AgentRef::new(town, &agent.rig_id, &agent.agent_id).and_then(|agent_ref| {
        let options = PullOptions {
            progress,
            deadline: None,
        };
        snapshot::pull(client, &agent_ref, path, &options)
    });
    match pulled {
        Ok(PullOutcome::Pulled(snapshot)) => Hydration::Pulled(snapshot),
        Ok(PullOutcome::NoSnapshot) => Hydration::NoSnapshot,
        Err(e) => Hydration::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kilo_db_lives_in_the_agent_home() {
        assert_eq!(
            kilo_db_path(Path::new("/tmp"), "mayor"),
            Path::new("/tmp/agent-home-mayor/.local/share/kilo/kilo.db")
        );
    }
}
