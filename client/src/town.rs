//! The town endpoints a container calls: heartbeat, container eviction, the process registry.

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
    pub port: Option<u64>,
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
}

/// `POST /api/towns/{town}/heartbeat {container_id}`, retried.
pub fn heartbeat(
    client: &Client,
    town: &str,
    container_id: &str,
    deadline: Option<Instant>,
) -> Result<Heartbeat> {
    let path = format!("{}/heartbeat", town_path(town)?);
    client.post_json(&path, &json!({ "container_id": container_id }), deadline)
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
