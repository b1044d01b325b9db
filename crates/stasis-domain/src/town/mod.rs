//! The town object: one SQL database per town, holding what outlives any
//! one container.
//!
//! - **State** ([`state`]): whether the town is draining, which container
//!   is being evicted, which one is current, the last heartbeat, and so
//!   whether the current container is alive (it heartbeat within the
//!   liveness timeout).
//! - **Eviction and heartbeat** ([`eviction`], [`heartbeat`]): an eviction
//!   sets draining; only a heartbeat from a container that was never evicted
//!   nor superseded clears it, becomes current and releases the dispatches
//!   deferred while draining. A late heartbeat from the dying container, or
//!   from a superseded one, changes nothing, its time included.
//! - **Containers** ([`containers`]): the containers that held the town,
//!   each with the epoch of its takeover, for fencing ([`crate::fence`]).
//! - **Bootstrap tokens** ([`bootstrap`]): the ones already exchanged for a
//!   container token, each for one container only.
//! - **Registry** ([`registry`]): which agents the container runs, replaced
//!   whole on each put, or one agent's entry at a time.
//! - **Directory** ([`agents`]): the agents registered in the town, with at
//!   most one mayor.
//! - **Dispatch** ([`dispatch`]): where a message for the mayor or any
//!   agent goes (deferred, delivered to a live session of a live container,
//!   or redispatched) and explicit dispatches of one agent.
//! - **Town log** ([`log`]): the town's own event log, gapless seqs, the
//!   newest [`log::MAX_TOWN_EVENTS`] kept.
//!
//! [`execute`] runs one [`TownCall`] inside the transaction the runtime owns.
//!
//! ```
//! # use stasis_domain::{town::{self, TownCall, TownEnv, TownReply}, sql::SqlStore};
//! # fn demo(store: &impl SqlStore) -> Result<(), stasis_domain::DomainError> {
//! town::migrate(store)?;
//! let env = TownEnv { now_ms: 1 };
//! let call = TownCall::Heartbeat {
//!     container_id: "container-a".into(),
//!     idempotency_key: None,
//! };
//! let reply = town::execute(store, &call, &env)?;
//! assert!(matches!(reply, TownReply::Heartbeat(beat) if !beat.draining));
//! # Ok(()) }
//! ```

pub mod agents;
pub mod bootstrap;
mod call;
pub mod containers;
mod deferred;
pub mod dispatch;
pub mod eviction;
pub mod heartbeat;
pub mod log;
pub mod registry;
mod schema;
pub mod state;

pub use agents::{AgentRef, RegisteredAgent, TownAgent};
pub use bootstrap::Redemption;
pub use call::{TownCall, TownEnv, TownReply, execute, execute_fenced, guards_town_call, is_write};
pub use containers::Standing;
pub use dispatch::MayorAction;
pub use eviction::EvictOutcome;
pub use heartbeat::HeartbeatOutcome;
pub use log::{TownEvent, TownEventPage};
pub use registry::{Registry, RegistryAgent};
pub use schema::migrate;
pub use state::{DEFAULT_LIVENESS_TIMEOUT_MS, TownState};

/// For `skip_serializing_if`: flags that only matter when set stay out of
/// the documented JSON shapes.
fn is_false(value: &bool) -> bool {
    !*value
}
