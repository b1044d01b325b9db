//! The process registry: which agents a container runs, replaced whole by
//! each put.

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
        return Err(DomainError::too_large(
            "registry_too_large",
            format!("a registry lists at most {MAX_REGISTRY_AGENTS} agents, this one {count}"),
            MAX_REGISTRY_AGENTS,
        ));
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
