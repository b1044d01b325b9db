//! Towns and the agent endpoints beyond the event log, for the cases that
//! restore an agent after its container goes away.
//!
//! [`Town`] reaches `/api/towns/{town}`: its state, eviction, heartbeats, the
//! container registry, its own event log, the Mayor and the town's agents.
//! [`Agent`] reaches one agent's record, sessions, checkpoint, memory,
//! conversation, export / import, dispatch and kilo.db snapshot; its
//! [`AgentState`] is everything a reader can see of the agent, to prove a
//! refused request changed nothing. The free functions build the streamed
//! message events a conversation is rebuilt from, check dispatches and
//! prompts, and make and hash snapshot bytes.
//!
//! Every request carries an admin token unless a case says otherwise, and
//! every town is fresh ([`Town::fresh`]), so cases run in parallel.

mod agent;
mod agent_snapshot;
mod dispatch;
mod kilo;
mod messages;
mod query;
mod shape;
mod town_endpoints;

pub use crate::assert_not_allowed;
pub use crate::snapshot::sha256_hex;
pub use agent::{Agent, AgentState};
pub use dispatch::{CLOSE, OPEN, assert_dispatch_shape, assert_prompt};
pub use kilo::{Kilo, kilo_db};
pub use messages::{delta, event, streamed, streamed_start, turn, turns, user_message};
pub use query::escape;
pub use shape::{assert_keys, assert_retry_after, keys};
pub use town_endpoints::{Town, TownState};
