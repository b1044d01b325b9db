//! What the host's objects are asked to do, and what they answer.

use bytes::Bytes;
use stasis_domain::{
    agent::{AgentCall, AgentReply},
    snapshot::{PutRequest, SnapshotMeta},
};

/// One call on an agent object.
pub enum ObjectCall {
    /// An event-log call, run by the event-log component.
    Agent(AgentCall),
    /// A whole snapshot operation, run by the snapshot component.
    Snapshot(SnapshotOp),
}

/// The answer to an [`ObjectCall`].
#[derive(Debug)]
pub enum ObjectAnswer {
    /// From the event-log component.
    Agent(AgentReply),
    /// From the snapshot component.
    Snapshot(SnapshotAnswer),
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
    /// The current snapshot, with its bytes when `with_bytes`.
    Get {
        /// Read (and verify) the bytes too.
        with_bytes: bool,
    },
    /// Delete the current snapshot.
    Delete,
    /// Remove every snapshot row and KV key.
    Wipe,
}

/// What a snapshot operation answers.
#[derive(Debug)]
pub enum SnapshotAnswer {
    /// The stored snapshot.
    Stored(SnapshotMeta),
    /// The current snapshot, if any.
    Found(Option<(SnapshotMeta, Option<Bytes>)>),
    /// Done.
    Done,
}
