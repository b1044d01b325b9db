//! Boot: take a container token, heartbeat, then hydrate every registered agent's kilo.db, then
//! hand over the pending dispatches, and ask for the dispatches the heartbeat did not bring.
//!
//! A heartbeat hands over only the dispatches deferred while the town drained. A container that
//! died without a drain (`kill -9`, a lost machine) deferred none, yet every agent it ran must
//! start again in the new container with its context: so boot requests a dispatch
//! (`POST .../rigs/{rig}/agents/{agent}/dispatch`) for every agent of the registry that ran in
//! another container and has no pending dispatch. After a clean drain (this heartbeat ended
//! it), whose last snapshots cover every agent's conversation, only the agents that still need
//! one get it ([`crate::dispatch_need`]: the hydrated kilo.db lacks part of the conversation, or
//! a reply was cut off), which is usually none.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::dispatch_need::{Need, dispatch_need};
use crate::error::{Error, Result};
use crate::http::Client;
use crate::http::credentials::token_file;
use crate::ids::AgentRef;
use crate::snapshot::{self, ChunkCache, PullOptions, PullOutcome, PulledSnapshot};
use crate::town::{self, RegisteredAgent};

/// How many agents' kilo.db are pulled at once (each pull fetches its chunks in parallel too).
const PARALLEL_HYDRATIONS: usize = 4;

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

/// What requesting one agent's dispatch did.
#[derive(Debug)]
pub enum DispatchRequest {
    /// The server's dispatch, as it sent it.
    Dispatched(Value),
    /// It failed (the agent is not registered in the town, the town drains, ...).
    Failed(Error),
}

/// The answer to `POST .../dispatch`.
#[derive(Deserialize)]
struct DispatchAnswer {
    dispatch: Value,
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
    /// A local chunk cache the pulls read from and fill.
    pub chunk_cache: Option<ChunkCache>,
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
    /// The dispatches the heartbeat released, as the server sent them.
    pub pending_dispatches: Vec<Value>,
    /// The dispatches boot requested: one per registered agent that ran in another container,
    /// had no pending dispatch and needed one, in registry order (none while the town still
    /// drains).
    pub requested_dispatches: Vec<AgentOutcome<DispatchRequest>>,
    /// The agents that ran in another container and need no dispatch: their hydrated kilo.db
    /// holds their whole conversation and nothing was cut off.
    pub not_needed: Vec<RegisteredAgent>,
}

impl BootReport {
    /// True when every agent hydrated and every requested dispatch came.
    pub fn complete(&self) -> bool {
        let hydrated = self
            .agents
            .iter()
            .all(|a| !matches!(a.result, Hydration::Failed(_)));
        let dispatched = self
            .requested_dispatches
            .iter()
            .all(|a| matches!(a.result, DispatchRequest::Dispatched(_)));
        hydrated && dispatched
    }

    /// Every dispatch to run: the pending ones, then the requested ones that came.
    pub fn dispatches(&self) -> Vec<Value> {
        let requested = self
            .requested_dispatches
            .iter()
            .filter_map(|a| match &a.result {
                DispatchRequest::Dispatched(dispatch) => Some(dispatch.clone()),
                DispatchRequest::Failed(_) => None,
            });
        self.pending_dispatches
            .iter()
            .cloned()
            .chain(requested)
            .collect()
    }
}

/// Binds the client to `options.container_id` (a container token, shared with the container's
/// sidecars and drain through [`token_file`] under `options.root`), heartbeats `town` as that
/// container, then pulls each registered agent's snapshot into [`kilo_db_path`], calling
/// `on_agent` after each, then requests a dispatch for each registered agent that ran in another
/// container and has no pending dispatch (see the module doc). An agent that fails does not stop
/// the others; a failed heartbeat fails the boot, and so does one that finds this container
/// fenced ([`Error::Superseded`]).
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
    let ran_elsewhere = !beat.draining
        && registry
            .container_id
            .as_deref()
            .is_some_and(|id| id != options.container_id);
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut agents = Vec::with_capacity(registry.agents.len());
    // Several agents at a time: each agent's runtime waits for its own kilo.db only. One at a
    // time with progress bars, which would draw over each other.
    let width = if options.progress {
        1
    } else {
        PARALLEL_HYDRATIONS
    };
    for group in registry.agents.chunks(width) {
        let results: Vec<Hydration> = std::thread::scope(|scope| {
            let running: Vec<_> = group
                .iter()
                .map(|agent| {
                    let path = kilo_db_path(&options.root, &agent.agent_id);
                    let duplicate = seen.insert(agent.agent_id.clone(), agent.rig_id.clone());
                    match duplicate {
                        Some(other_rig) => Err(Hydration::Failed(Error::Protocol {
                            what: "the container registry".into(),
                            detail: format!(
                                "agent {} is registered in rigs {other_rig} and {}; both would \
                                 use {}",
                                agent.agent_id,
                                agent.rig_id,
                                path.display()
                            ),
                        })),
                        None => {
                            Ok(scope.spawn(move || hydrate(client, town, agent, &path, options)))
                        }
                    }
                })
                .collect();
            running
                .into_iter()
                .map(|started| match started {
                    Ok(handle) => handle.join().unwrap_or_else(|_| {
                        Hydration::Failed(Error::Config("a hydration thread panicked".into()))
                    }),
                    Err(refused) => refused,
                })
                .collect()
        });
        for (agent, result) in group.iter().zip(results) {
            let outcome = AgentOutcome {
                path: kilo_db_path(&options.root, &agent.agent_id),
                agent: agent.clone(),
                result,
            };
            on_agent(&outcome);
            agents.push(outcome);
        }
    }
    let (requested_dispatches, not_needed) = if ran_elsewhere {
        request_missing_dispatches(
            client,
            town,
            &agents,
            &beat.pending_dispatches,
            beat.cleared_drain,
        )
    } else {
        (Vec::new(), Vec::new())
    };
    Ok(BootReport {
        container_id: options.container_id.clone(),
        draining: beat.draining,
        cleared_drain: beat.cleared_drain,
        agents,
        pending_dispatches: beat.pending_dispatches,
        requested_dispatches,
        not_needed,
    })
}

/// A dispatch for each of `agents` (each agent once) that none of `pending` is for and, after a
/// clean drain (`drained`), that needs one; the agents that need none come second.
fn request_missing_dispatches(
    client: &Client,
    town: &str,
    agents: &[AgentOutcome<Hydration>],
    pending: &[Value],
    drained: bool,
) -> (Vec<AgentOutcome<DispatchRequest>>, Vec<RegisteredAgent>) {
    let mut asked: Vec<(&str, &str)> = Vec::new();
    let mut requested = Vec::new();
    let mut not_needed = Vec::new();
    for outcome in agents {
        let agent = &outcome.agent;
        let key = (agent.rig_id.as_str(), agent.agent_id.as_str());
        if asked.contains(&key) || pending.iter().any(|d| is_for(d, agent)) {
            continue;
        }
        asked.push(key);
        if drained && need(client, town, outcome).is_none() {
            not_needed.push(agent.clone());
            continue;
        }
        requested.push(AgentOutcome {
            agent: agent.clone(),
            path: outcome.path.clone(),
            result: request_dispatch(client, town, agent),
        });
    }
    (requested, not_needed)
}

/// Why the agent of `outcome` needs a dispatch, if it does (a failed hydration always does).
fn need(client: &Client, town: &str, outcome: &AgentOutcome<Hydration>) -> Option<Need> {
    let watermark = match &outcome.result {
        Hydration::Pulled(pulled) => pulled.event_seq,
        Hydration::NoSnapshot => None,
        Hydration::Failed(e) => return Some(Need::Unknown(e.to_string())),
    };
    match AgentRef::new(town, &outcome.agent.rig_id, &outcome.agent.agent_id) {
        Ok(agent) => dispatch_need(client, &agent, watermark),
        Err(e) => Some(Need::Unknown(e.to_string())),
    }
}

/// Whether `dispatch` is `agent`'s (by `agent_id`, and `rig_id` when it names one).
fn is_for(dispatch: &Value, agent: &RegisteredAgent) -> bool {
    let field = |name: &str| dispatch.get(name).and_then(Value::as_str);
    field("agent_id") == Some(agent.agent_id.as_str())
        && field("rig_id").is_none_or(|rig| rig == agent.rig_id)
}

/// `POST .../rigs/{rig}/agents/{agent}/dispatch {}`, retried (a repeat only logs one more
/// `dispatch_agent` town event).
fn request_dispatch(client: &Client, town: &str, agent: &RegisteredAgent) -> DispatchRequest {
    let answer = AgentRef::new(town, &agent.rig_id, &agent.agent_id).and_then(|agent_ref| {
        let body = serde_json::Map::new();
        client.post_json::<DispatchAnswer>(&agent_ref.path("/dispatch"), &body, None)
    });
    match answer {
        Ok(answer) => DispatchRequest::Dispatched(answer.dispatch),
        Err(e) => DispatchRequest::Failed(e),
    }
}

/// Pulls one agent's snapshot (by chunks, in parallel, through the chunk cache when the server
/// serves them).
fn hydrate(
    client: &Client,
    town: &str,
    agent: &RegisteredAgent,
    path: &Path,
    boot: &BootOptions,
) -> Hydration {
    let pulled = AgentRef::new(town, &agent.rig_id, &agent.agent_id).and_then(|agent_ref| {
        let options = PullOptions {
            progress: boot.progress,
            cache: boot.chunk_cache.clone(),
            ..PullOptions::default()
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

    #[test]
    fn a_dispatch_is_an_agents_by_its_id_and_rig() {
        let mayor = RegisteredAgent {
            agent_id: "mayor".into(),
            rig_id: "hq".into(),
            role: "mayor".into(),
            session_id: None,
            port: None,
        };
        let dispatch = |text: &str| serde_json::from_str::<Value>(text).unwrap_or_default();
        assert!(is_for(
            &dispatch(r#"{"agent_id":"mayor","rig_id":"hq"}"#),
            &mayor
        ));
        assert!(is_for(&dispatch(r#"{"agent_id":"mayor"}"#), &mayor));
        assert!(!is_for(
            &dispatch(r#"{"agent_id":"mayor","rig_id":"main"}"#),
            &mayor
        ));
        assert!(!is_for(
            &dispatch(r#"{"agent_id":"polecat-1","rig_id":"hq"}"#),
            &mayor
        ));
        assert!(!is_for(&dispatch(r#"{"agent_id":7}"#), &mayor));
    }
}
