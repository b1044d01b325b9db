//! What a pull came to: the snapshot it wrote, or none on the server. The chunked and the
//! whole-file pull answer the same.

use serde::Serialize;

use super::transfer::PullTransfer;

/// The code of stasis's 404 for an agent without a snapshot.
pub(crate) const NO_SNAPSHOT: &str = "snapshot_not_found";

/// A snapshot written by a pull.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PulledSnapshot {
    /// The snapshot's version, when the server said.
    pub version: Option<u64>,
    /// The hex sha256 of the bytes, verified.
    pub sha256: String,
    /// Bytes written.
    pub size: u64,
    /// The event watermark stored with it.
    pub event_seq: Option<u64>,
    /// True when the local file already held these bytes (304) and was left as it was.
    pub unchanged: bool,
    /// What came over the wire (`None` when nothing was written).
    pub transfer: Option<PullTransfer>,
}

/// What a pull found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullOutcome {
    /// The snapshot is at the requested path.
    Pulled(PulledSnapshot),
    /// The server holds no snapshot for the agent; nothing was written.
    NoSnapshot,
}
