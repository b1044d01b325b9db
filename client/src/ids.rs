//! Ids as the server accepts them, and the URL paths built from them.

use std::fmt;

use crate::error::{Error, Result};

/// Checks that `value` is an id the server accepts: `[A-Za-z0-9_.:-]{1,128}`, not `.` or `..`.
/// Checked ids need no escaping in a URL path or a file name.
pub fn check_id(what: &'static str, value: &str) -> Result<()> {
    let ok = (1..=128).contains(&value.len())
        && value != "."
        && value != ".."
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidId {
            what,
            value: value.to_owned(),
        })
    }
}

/// The path of a town: `/api/towns/{town}`.
pub fn town_path(town: &str) -> Result<String> {
    check_id("town", town)?;
    Ok(format!("/api/towns/{town}"))
}

/// One agent of one rig of one town, with checked ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRef {
    town: String,
    rig: String,
    agent: String,
}

impl AgentRef {
    /// Checks the three ids.
    pub fn new(town: &str, rig: &str, agent: &str) -> Result<Self> {
        check_id("town", town)?;
        check_id("rig", rig)?;
        check_id("agent", agent)?;
        Ok(AgentRef {
            town: town.to_owned(),
            rig: rig.to_owned(),
            agent: agent.to_owned(),
        })
    }

    /// The town id.
    pub fn town(&self) -> &str {
        &self.town
    }

    /// The rig id.
    pub fn rig(&self) -> &str {
        &self.rig
    }

    /// The agent id.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}` followed by `suffix` (e.g. `/db-snapshot`).
    pub fn path(&self, suffix: &str) -> String {
        format!(
            "/api/towns/{}/rigs/{}/agents/{}{suffix}",
            self.town, self.rig, self.agent
        )
    }
}

impl fmt::Display for AgentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.town, self.rig, self.agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_server_pattern() {
        for good in ["a", "mayor", "rig-1", "x.y:z_0", &"a".repeat(128)] {
            assert!(check_id("agent", good).is_ok(), "{good:?}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", "%2F", &"a".repeat(129)] {
            assert!(check_id("agent", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_agent_path_names_town_rig_and_agent() -> Result<()> {
        let agent = AgentRef::new("t", "r", "a")?;
        assert_eq!(
            agent.path("/db-snapshot"),
            "/api/towns/t/rigs/r/agents/a/db-snapshot"
        );
        assert_eq!(agent.to_string(), "t/r/a");
        Ok(())
    }
}
