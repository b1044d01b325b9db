//! What the runtime supplies to every call on an agent object: its clock
//! and its settings. The agent's calls, its state, its snapshots and its
//! imports all read it, so it lives apart from each of them.

use crate::history::RetentionPolicy;
use serde::{Deserialize, Serialize};

/// What the runtime supplies to every call: the clock and its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectEnv {
    /// Milliseconds since the epoch.
    pub now_ms: i64,
    /// Retention: events kept per agent.
    pub max_events: u64,
    /// How long superseded versions are kept (`crate::history`).
    #[serde(default)]
    pub retention: RetentionPolicy,
}
