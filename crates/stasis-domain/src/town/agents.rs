//! The town's directory of registered agents, and the one-mayor rule.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use crate::{
    DomainError, Refusal,
    ids::check_id,
    params,
    sql::{Row, RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The role that makes an agent the town's mayor.
pub const MAYOR_ROLE: &str = "mayor";
/// The longest role accepted, in bytes.
pub const MAX_ROLE_BYTES: usize = 128;
/// Agents a town's directory holds at most; keeps the object bounded.
pub const MAX_TOWN_AGENTS: u64 = 10_000;

/// Names one agent of the town.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AgentRef {
    /// Its rig.
    pub rig_id: String,
    /// The agent.
    pub agent_id: String,
}

/// A registered agent and its role.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TownAgent {
    /// Its rig.
    pub rig_id: String,
    /// The agent.
    pub agent_id: String,
    /// `mayor`, `polecat`, `refinery` or any other string.
    pub role: String,
}

impl TownAgent {
    /// The agent's name without its role.
    pub fn reference(&self) -> AgentRef {
        AgentRef {
            rig_id: self.rig_id.clone(),
            agent_id: self.agent_id.clone(),
        }
    }
}

/// The outcome of a registration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredAgent {
    /// The agent as now registered.
    pub agent: TownAgent,
    /// True when it was not registered before.
    pub created: bool,
}

/// Refuses an empty role or one longer than [`MAX_ROLE_BYTES`].
pub fn check_role<'a>(what: &str, role: &'a str) -> Result<&'a str, DomainError> {
    if role.is_empty() || role.len() > MAX_ROLE_BYTES {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("{what} must be 1 to {MAX_ROLE_BYTES} bytes"),
        ));
    }
    Ok(role)
}

/// Registers an agent or changes its role. A town has at most one mayor:
/// making a second agent mayor is refused (409 `mayor_exists`).
pub fn register(
    store: &impl SqlStore,
    wanted: &TownAgent,
    now_ms: i64,
) -> Result<RegisteredAgent, DomainError> {
    check_id("rig_id", &wanted.rig_id)?;
    check_id("agent_id", &wanted.agent_id)?;
    check_role("role", &wanted.role)?;
    let existed = find(store, &wanted.rig_id, &wanted.agent_id)?.is_some();
    if wanted.role == MAYOR_ROLE
        && let Some(mayor) = mayor(store)?
        && mayor.reference() != wanted.reference()
    {
        return Err(DomainError::Conflict(Refusal::new(
            "mayor_exists",
            format!(
                "the town already has a mayor: agent {:?} of rig {:?}; forget it or change its role first",
                mayor.agent_id, mayor.rig_id
            ),
        )));
    }
    if !existed {
        check_room(store)?;
    }
    store.run(
        "INSERT INTO town_agents (rig_id, agent_id, role, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (rig_id, agent_id) DO UPDATE SET role = excluded.role, updated_at = excluded.updated_at",
        params![
            wanted.rig_id.as_str(),
            wanted.agent_id.as_str(),
            wanted.role.as_str(),
            now_ms
        ],
    )?;
    Ok(RegisteredAgent {
        agent: wanted.clone(),
        created: !existed,
    })
}

/// Removes an agent from the directory; true when it was registered (the
/// town's `ForgetAgent` call also cancels a dispatch deferred for it).
pub fn forget(store: &impl SqlStore, agent: &AgentRef) -> Result<bool, DomainError> {
    check_id("rig_id", &agent.rig_id)?;
    check_id("agent_id", &agent.agent_id)?;
    if find(store, &agent.rig_id, &agent.agent_id)?.is_none() {
        return Ok(false);
    }
    store.run(
        "DELETE FROM town_agents WHERE rig_id = ?1 AND agent_id = ?2",
        params![agent.rig_id.as_str(), agent.agent_id.as_str()],
    )?;
    Ok(true)
}

/// Every registered agent, by rig then agent.
pub fn list(store: &impl SqlStore) -> Result<Vec<TownAgent>, DomainError> {
    let rows = store.execute(
        "SELECT rig_id, agent_id, role FROM town_agents ORDER BY rig_id, agent_id",
        Vec::new(),
    )?;
    rows.iter().map(agent_from_row).collect()
}

/// The registered agent named, if any.
pub fn find(
    store: &impl SqlStore,
    rig_id: &str,
    agent_id: &str,
) -> Result<Option<TownAgent>, DomainError> {
    store
        .first_row(
            "SELECT rig_id, agent_id, role FROM town_agents WHERE rig_id = ?1 AND agent_id = ?2",
            params![rig_id, agent_id],
        )?
        .map(|row| agent_from_row(&row))
        .transpose()
}

/// The agent with role `mayor`, if any.
pub fn mayor(store: &impl SqlStore) -> Result<Option<TownAgent>, DomainError> {
    store
        .first_row(
            "SELECT rig_id, agent_id, role FROM town_agents WHERE role = ?1 LIMIT 1",
            params![MAYOR_ROLE],
        )?
        .map(|row| agent_from_row(&row))
        .transpose()
}

fn check_room(store: &impl SqlStore) -> Result<(), DomainError> {
    let count = store
        .first_row("SELECT COUNT(*) FROM town_agents", Vec::new())?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(0);
    if count >= MAX_TOWN_AGENTS {
        return Err(DomainError::too_large(
            "too_many_agents",
            format!("a town holds at most {MAX_TOWN_AGENTS} agents"),
            MAX_TOWN_AGENTS,
        ));
    }
    Ok(())
}

fn agent_from_row(row: &Row) -> Result<TownAgent, DomainError> {
    Ok(TownAgent {
        rig_id: row.text(0)?.to_owned(),
        agent_id: row.text(1)?.to_owned(),
        role: row.text(2)?.to_owned(),
    })
}
