//! The town endpoints a container calls: heartbeat, container eviction, the process registry,
//! and the town's state.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::town_path;

/// One agent a container runs, as the registry records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredAgent {
    /// The agent's id.
    pub agent_id: String,
    /// Its rig.
    pub rig_id: String,
    /// Its role (`mayor`, `polecat`, `refinery`, ...).
    #[serde(default)]
    pub role: String,
    /// The SDK session it runs, when known.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The port of its SDK server, when known.
    #[serde(default)]
    pub port: Option<u16>,
}

/// Which agents a container runs (`GET /api/towns/{town}/container-registry`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// The container that registered them.
    #[serde(default)]
    pub container_id: Option<String>,
    /// The agents.
    #[serde(default)]
    pub agents: Vec<RegisteredAgent>,
    /// When it was last replaced (ms since the epoch; `None` before the first `PUT`).
    #[serde(default)]
    pub updated_at: Option<i64>,
}

/// A town's state (`GET /api/towns/{town}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TownState {
    /// An eviction was announced and no other container has heartbeat since.
    #[serde(default)]
    pub draining: bool,
    /// The container whose eviction started the drain.
    #[serde(default)]
    pub evicting_container_id: Option<String>,
    /// The container that last took the town over (by its heartbeat).
    #[serde(default)]
    pub current_container_id: Option<String>,
    /// The newest heartbeat from any container, ms since the epoch.
    #[serde(default)]
    pub last_heartbeat_at: Option<i64>,
}

/// The answer to a heartbeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Whether the town is (still) draining.
    #[serde(default)]
    pub draining: bool,
    /// Whether this heartbeat ended a drain.
    #[serde(default)]
    pub cleared_drain: bool,
    /// The registry the previous container left (absent or null: empty).
    #[serde(default)]
    pub registry: Option<Registry>,
    /// Dispatches for this container to run (each an agent to start, with its context).
    #[serde(default)]
    pub pending_dispatches: Vec<Value>,
    /// This container was superseded by another one: its heartbeat took nothing over, and it
    /// is fenced.
    #[serde(default)]
    pub fenced: bool,
    /// With `fenced`: the container holding the town.
    #[serde(default)]
    pub current_container_id: Option<String>,
}

/// `POST /api/towns/{town}/heartbeat {container_id}`, retried under one `Idempotency-Key`: if
/// an attempt's answer is lost, the retry gets the dispatches that attempt released.
pub fn heartbeat(
    client: &Client,
    town: &str,
    container_id: &str,
    deadline: Option<Instant>,
) -> Result<Heartbeat> {
    let path = format!("{}/heartbeat", town_path(town)?);
    let key = format!("heartbeat-{}", new_container_id());
    client.post_json_once(
        &path,
        &json!({ "container_id": container_id }),
        &key,
        deadline,
    )
}

/// `POST /api/towns/{town}/container-eviction {container_id, reason}` (idempotent), retried.
pub fn evict(
    client: &Client,
    town: &str,
    container_id: &str,
    reason: &str,
    deadline: Option<Instant>,
) -> Result<()> {
    let path = format!("{}/container-eviction", town_path(town)?);
    let body = json!({ "container_id": container_id, "reason": reason });
    client.post(&path, &body, deadline).map(drop)
}

/// `GET /api/towns/{town}/container-registry`, retried; a town with none (404) has an empty one.
pub fn registry(client: &Client, town: &str, deadline: Option<Instant>) -> Result<Registry> {
    let path = format!("{}/container-registry", town_path(town)?);
    match client.get_json::<Option<Registry>>(&path, deadline) {
        Ok(registry) => Ok(registry.unwrap_or_default()),
        Err(Error::Api { status: 404, .. }) => Ok(Registry::default()),
        Err(e) => Err(e),
    }
}

/// `PUT /api/towns/{town}/container-registry {container_id, agents}`, retried (a `PUT` replaces
/// the registry whole, so repeating it is harmless). Answers the registry as stored.
pub fn put_registry(
    client: &Client,
    town: &str,
    container_id: &str,
    agents: &[RegisteredAgent],
    deadline: Option<Instant>,
) -> Result<Registry> {
    crate::ids::check_id("container", container_id)?;
    let path = format!("{}/container-registry", town_path(town)?);
    let body = json!({ "container_id": container_id, "agents": agents });
    client.put_json(&path, &body, deadline)
}

/// `GET /api/towns/{town}`, retried (a town never seen answers an empty state).
pub fn state(client: &Client, town: &str, deadline: Option<Instant>) -> Result<TownState> {
    client.get_json(&town_path(town)?, deadline)
}

/// A fresh container id: `c-` and 32 hex digits, different on every call and every boot.
pub fn new_container_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = (nanos, std::process::id());
    // Two independently keyed hashers (RandomState is seeded from the OS) give 128 bits.
    let high = RandomState::new().hash_one(seed);
    let low = RandomState::new().hash_one(seed);
    format!("c-{high:016x}{low:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_are_fresh_valid_ids() -> Result<()> {
        let a = new_container_id();
        let b = new_container_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), 34);
        crate::ids::check_id("container", &a)
    }

    #[test]
    fn a_heartbeat_with_a_null_registry_parses() -> Result<()> {
        let beat: Heartbeat = serde_json::from_str(
            r#"{"draining":false,"cleared_drain":true,"registry":null,"pending_dispatches":[]}"#,
        )
        .map_err(|e| Error::Config(e.to_string()))?;
        assert!(beat.cleared_drain);
        assert_eq!(beat.registry, None);
        Ok(())
    }
}
