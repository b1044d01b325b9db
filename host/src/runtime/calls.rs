//! What the host's objects are asked to do, and what they answer.

use bytes::Bytes;
use stasis_domain::{
    agent::{AgentCall, AgentReply},
    snapshot::{PutRequest, SnapshotMeta, StagedSnapshot},
    town::{TownCall, TownReply},
};

/// One call on an object.
pub enum ObjectCall {
    /// An agent call: event-log calls go to the event-log component, the
    /// rest to the session component.
    Agent(AgentCall),
    /// A whole snapshot operation, run by the snapshot component.
    Snapshot(SnapshotOp),
    /// A town call, run by the session component's `town` export.
    Town(TownCall),
}

/// The answer to an [`ObjectCall`].
#[derive(Debug)]
pub enum ObjectAnswer {
    /// To an agent call.
    Agent(AgentReply),
    /// From the snapshot component.
    Snapshot(SnapshotAnswer),
    /// To a town call.
    Town(TownReply),
}

/// A snapshot operation.
pub enum SnapshotOp {
    /// Store a snapshot.
    Put {
        /// Its headers, as the domain reads them.
        request: PutRequest,
        /// The bytes.
        body: Bytes,
    },
    /// Store a snapshot's bytes without making it current (an import's).
    Stage {
        /// Its headers, as the domain reads them.
        request: PutRequest,
        /// The bytes.
        body: Bytes,
    },
    /// The current snapshot, with its bytes when `with_bytes`.
    Get {
        /// Read (and verify) the bytes too.
        with_bytes: bool,
    },
    /// Delete the current snapshot.
    Delete,
    /// Remove every snapshot row and KV key.
    Wipe,
    /// Delete the KV keys under this prefix that nothing names.
    Sweep {
        /// The agent's key prefix.
        key_prefix: String,
    },
}

impl SnapshotOp {
    /// Whether the operation may change the agent (and so is fenced).
    pub fn changes_the_agent(&self) -> bool {
        !matches!(self, SnapshotOp::Get { .. })
    }
}

/// What a snapshot operation answers.
#[derive(Debug)]
pub enum SnapshotAnswer {
    /// The stored snapshot.
    Stored(SnapshotMeta),
    /// The staged snapshot.
    Staged(StagedSnapshot),
    /// The current snapshot, if any.
    Found(Option<(SnapshotMeta, Option<Bytes>)>),
    /// Done.
    Done,
}
