//! Identifiers: towns, rigs, agents, sessions, producers.

use crate::error::{DomainError, Refusal};
use serde::{Deserialize, Serialize};

/// The longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// Checks `[A-Za-z0-9_.:-]{1,128}`, and not `.` or `..` (ids become path
/// segments and file names, so those two would escape their folder).
pub fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// Returns `id` if valid, or an `invalid_id` refusal naming `what`.
pub fn check_id<'a>(what: &str, id: &'a str) -> Result<&'a str, DomainError> {
    if is_valid_id(id) {
        Ok(id)
    } else {
        Err(DomainError::InvalidInput(Refusal::new(
            "invalid_id",
            format!(
                "{what} must match [A-Za-z0-9_.:-]{{1,{MAX_ID_LEN}}} and not be '.' or '..', got {:?}",
                truncate_for_message(id)
            ),
        )))
    }
}

fn truncate_for_message(id: &str) -> String {
    id.chars().take(140).collect()
}

/// The address of one agent object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AgentKey {
    /// The town the agent belongs to.
    pub town: String,
    /// The rig (project) inside the town.
    pub rig: String,
    /// The agent itself.
    pub agent: String,
}

impl AgentKey {
    /// Builds a key after validating each part.
    pub fn new(town: &str, rig: &str, agent: &str) -> Result<Self, DomainError> {
        Ok(Self {
            town: check_id("town id", town)?.to_owned(),
            rig: check_id("rig id", rig)?.to_owned(),
            agent: check_id("agent id", agent)?.to_owned(),
        })
    }

    /// A stable name for the object, e.g. for `id_from_name` on the edge.
    /// `/` cannot occur inside an id, so the name is unambiguous.
    pub fn object_name(&self) -> String {
        format!("{}/{}/{}", self.town, self.rig, self.agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_alphabet() {
        assert!(is_valid_id("mayor"));
        assert!(is_valid_id("a.b:c-d_e9"));
        assert!(is_valid_id(&"x".repeat(128)));
        assert!(is_valid_id("..."));
    }

    #[test]
    fn refuses_dots_slashes_empty_and_long_ids() {
        for bad in ["", ".", "..", "a/b", "a b", "é", "a%2F", &"x".repeat(129)] {
            assert!(!is_valid_id(bad), "{bad:?} should be refused");
        }
    }

    #[test]
    fn check_id_names_the_field_in_its_refusal() {
        let err = check_id("town id", "..").unwrap_err();
        assert_eq!(err.code(), "invalid_id");
        assert!(err.to_string().contains("town id"));
    }
}
