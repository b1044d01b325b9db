//! Typed operations: a call that names the type of its reply.
//!
//! An object answers one reply enum per kind of object ([`AgentReply`],
//! [`TownReply`], [`SnapshotReply`]): that is the wire. A caller, though,
//! always knows which reply its call gets. An [`Operation`] pairs the call
//! with the one reading of the reply that fits it, written once in each
//! object's table ([`agent`], [`snapshot`], [`town`]), so that callers get
//! `R` and handle no reply they cannot get. A reply that does not fit is
//! corruption (a [`DomainError::Storage`]), never a caller's concern.
//!
//! The pairing itself is [`crate::typed_operation`]. The snapshot steps'
//! table lives in the snapshot module, beside the sagas that run it, and is
//! named here too.
//!
//! [`AgentReply`]: crate::agent::AgentReply
//! [`TownReply`]: crate::town::TownReply
//! [`SnapshotReply`]: crate::snapshot::SnapshotReply
//! [`DomainError::Storage`]: crate::DomainError::Storage

pub mod agent;
pub mod town;

pub use crate::snapshot::operations as snapshot;
pub use crate::typed_operation::{Answer, Operation};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DomainError, agent::AgentReply, agent_state::StateReply};

    #[test]
    fn a_reply_of_another_operation_is_a_storage_error() {
        let op = agent::get_checkpoint();
        let wrong = AgentReply::State(StateReply::Deleted);
        let err = op.run_with(|_| Ok(wrong)).unwrap_err();
        assert!(
            matches!(&err, DomainError::Storage(m) if m.contains("get_checkpoint")),
            "{err:?}"
        );
    }

    #[test]
    fn a_snapshot_step_reads_through_the_agent_reply() {
        let op = snapshot::remove(0).within(agent::snapshot_call, agent::snapshot_reply);
        let reply = AgentReply::Snapshot(crate::snapshot::SnapshotReply::Removed(Some("k".into())));
        assert_eq!(op.run_with(|_| Ok(reply)).unwrap(), Some("k".to_owned()));
    }
}
