//! The process registry: which agents a container runs, replaced whole by
//! each put, or one agent's entry at a time ([`put_agent`],
//! [`remove_agent`]), so that one supervisor per agent records its own
//! entry without clobbering the others'.
//!
//! An entry put by a container other than the registry's moves the
//! registry to that container: the other agents stay listed (so a restart
//! still brings every one of them back) but lose their `session_id` and
//! `port`, which were the old container's and are live nowhere now.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use super::{agents::check_role, log};
use crate::{
    DomainError,
    ids::check_id,
    params,
    sql::{Row, RowExt, SqlStore, SqlValue},
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Agents one registry lists at most.
pub const MAX_REGISTRY_AGENTS: u64 = 1_000;

/// One agent a container runs.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryAgent {
    /// The agent.
    pub agent_id: String,
    /// Its rig.
    pub rig_id: String,
    /// Its role.
    pub role: String,
    /// Its live session, if it has one.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The port it listens on, if any.
    #[serde(default)]
    pub port: Option<u16>,
}

/// The registry as stored.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    /// The container that put it; `None` before the first put.
    pub container_id: Option<String>,
    /// Its agents, in the order put.
    pub agents: Vec<RegistryAgent>,
    /// When it was put, ms since the epoch; `None` before the first put.
    pub updated_at: Option<i64>,
}

/// Replaces the registry and records `registry_updated`.
pub fn put(
    store: &impl SqlStore,
    container_id: &str,
    agents: &[RegistryAgent],
    now_ms: i64,
) -> Result<Registry, DomainError> {
    validate(container_id, agents)?;
    store.run(
        "INSERT INTO registry_head (id, container_id, updated_at) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET container_id = excluded.container_id, updated_at = excluded.updated_at",
        params![container_id, now_ms],
    )?;
    store.run("DELETE FROM registry_agents", Vec::new())?;
    for (position, agent) in agents.iter().enumerate() {
        store.run(
            "INSERT INTO registry_agents (position, rig_id, agent_id, role, session_id, port)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                i64::try_from(position).unwrap_or(i64::MAX),
                agent.rig_id.as_str(),
                agent.agent_id.as_str(),
                agent.role.as_str(),
                agent.session_id.as_deref(),
                agent.port.map(u32::from)
            ],
        )?;
    }
    log::record(
        store,
        log::REGISTRY_UPDATED,
        &log::RegistryUpdated {
            container_id,
            agents: agents.len(),
        },
        now_ms,
    )?;
    Ok(Registry {
        container_id: Some(container_id.to_owned()),
        agents: agents.to_vec(),
        updated_at: Some(now_ms),
    })
}

/// Puts one agent's entry (replacing its earlier one, or added last) as run
/// by `container_id`; see the module doc for another container's entry.
/// Records `registry_updated`.
pub fn put_agent(
    store: &impl SqlStore,
    container_id: &str,
    agent: &RegistryAgent,
    now_ms: i64,
) -> Result<Registry, DomainError> {
    validate(container_id, std::slice::from_ref(agent))?;
    let before = get(store)?;
    if before.container_id.as_deref() != Some(container_id) {
        store.run(
            "UPDATE registry_agents SET session_id = NULL, port = NULL",
            Vec::new(),
        )?;
    }
    let listed = before
        .agents
        .iter()
        .any(|a| a.rig_id == agent.rig_id && a.agent_id == agent.agent_id);
    if listed {
        store.run(
            "UPDATE registry_agents SET role = ?3, session_id = ?4, port = ?5
             WHERE rig_id = ?1 AND agent_id = ?2",
            entry_params(agent),
        )?;
    } else {
        let count = u64::try_from(before.agents.len()).unwrap_or(u64::MAX);
        if count >= MAX_REGISTRY_AGENTS {
            return Err(too_many(count + 1));
        }
        store.run(
            "INSERT INTO registry_agents (position, rig_id, agent_id, role, session_id, port)
             VALUES ((SELECT COALESCE(MAX(position), -1) + 1 FROM registry_agents), ?1, ?2, ?3, ?4, ?5)",
            entry_params(agent),
        )?;
    }
    touch(store, container_id, now_ms)
}

/// Removes one agent's entry, if listed (the registry stays with its
/// container). Records `registry_updated` when it was listed.
pub fn remove_agent(
    store: &impl SqlStore,
    rig_id: &str,
    agent_id: &str,
    now_ms: i64,
) -> Result<Registry, DomainError> {
    check_id("rig_id", rig_id)?;
    check_id("agent_id", agent_id)?;
    let before = get(store)?;
    let listed = before
        .agents
        .iter()
        .any(|a| a.rig_id == rig_id && a.agent_id == agent_id);
    let Some(container_id) = before.container_id.clone().filter(|_| listed) else {
        return Ok(before);
    };
    store.run(
        "DELETE FROM registry_agents WHERE rig_id = ?1 AND agent_id = ?2",
        params![rig_id, agent_id],
    )?;
    touch(store, &container_id, now_ms)
}

/// Sets the registry's container and time, records `registry_updated` and
/// returns the registry.
fn touch(store: &impl SqlStore, container_id: &str, now_ms: i64) -> Result<Registry, DomainError> {
    store.run(
        "INSERT INTO registry_head (id, container_id, updated_at) VALUES (1, ?1, ?2)
         ON CONFLICT (id) DO UPDATE SET container_id = excluded.container_id, updated_at = excluded.updated_at",
        params![container_id, now_ms],
    )?;
    let registry = get(store)?;
    log::record(
        store,
        log::REGISTRY_UPDATED,
        &log::RegistryUpdated {
            container_id,
            agents: registry.agents.len(),
        },
        now_ms,
    )?;
    Ok(registry)
}

fn entry_params(agent: &RegistryAgent) -> Vec<crate::sql::SqlValue> {
    params![
        agent.rig_id.as_str(),
        agent.agent_id.as_str(),
        agent.role.as_str(),
        agent.session_id.as_deref(),
        agent.port.map(u32::from)
    ]
}

fn too_many(count: u64) -> DomainError {
    DomainError::too_large(
        "registry_too_large",
        format!("a registry lists at most {MAX_REGISTRY_AGENTS} agents, this one {count}"),
        MAX_REGISTRY_AGENTS,
    )
}

/// The registry; empty, with no container, before the first put.
pub fn get(store: &impl SqlStore) -> Result<Registry, DomainError> {
    let Some(head) = store.first_row(
        "SELECT container_id, updated_at FROM registry_head WHERE id = 1",
        Vec::new(),
    )?
    else {
        return Ok(Registry {
            container_id: None,
            agents: Vec::new(),
            updated_at: None,
        });
    };
    let rows = store.execute(
        "SELECT rig_id, agent_id, role, session_id, port FROM registry_agents ORDER BY position",
        Vec::new(),
    )?;
    Ok(Registry {
        container_id: Some(head.text(0)?.to_owned()),
        agents: rows.iter().map(agent_from_row).collect::<Result<_, _>>()?,
        updated_at: Some(head.int(1)?),
    })
}

/// Checks every id and role, the count, and that no agent is listed twice.
fn validate(container_id: &str, agents: &[RegistryAgent]) -> Result<(), DomainError> {
    check_id("container_id", container_id)?;
    let count = u64::try_from(agents.len()).unwrap_or(u64::MAX);
    if count > MAX_REGISTRY_AGENTS {
        return Err(too_many(count));
    }
    let mut seen = BTreeSet::new();
    for (index, agent) in agents.iter().enumerate() {
        check_id(&format!("agents[{index}].agent_id"), &agent.agent_id)?;
        check_id(&format!("agents[{index}].rig_id"), &agent.rig_id)?;
        check_role(&format!("agents[{index}].role"), &agent.role)?;
        if let Some(session) = &agent.session_id {
            check_id(&format!("agents[{index}].session_id"), session)?;
        }
        if !seen.insert((agent.rig_id.as_str(), agent.agent_id.as_str())) {
            return Err(DomainError::invalid(
                "duplicate_agent",
                format!(
                    "agents[{index}] lists agent {:?} of rig {:?} a second time",
                    agent.agent_id, agent.rig_id
                ),
            ));
        }
    }
    Ok(())
}

fn agent_from_row(row: &Row) -> Result<RegistryAgent, DomainError> {
    let port = match row.get(4) {
        Some(SqlValue::Null) => None,
        _ => Some(u16::try_from(row.int(4)?).map_err(|_| {
            DomainError::Storage(format!("registry port {:?} out of range", row.get(4)))
        })?),
    };
    Ok(RegistryAgent {
        rig_id: row.text(0)?.to_owned(),
        agent_id: row.text(1)?.to_owned(),
        role: row.text(2)?.to_owned(),
        session_id: row.opt_text(3)?.map(str::to_owned),
        port,
    })
}
