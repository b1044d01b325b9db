//! The port each runtime implements: how a call reaches an object.

use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    ids::AgentKey,
};
use std::{future::Future, time::Duration};

/// Delivers calls to objects. The local host runs them in wasm components
/// over per-object SQLite; the edge worker sends them to Durable Objects.
///
/// Each call is atomic and serialised with every other call on the same
/// object; calls on different objects may run in parallel.
pub trait Objects {
    /// Runs `call` on the agent's object.
    fn agent(
        &self,
        key: &AgentKey,
        call: AgentCall,
    ) -> impl Future<Output = Result<AgentReply, DomainError>>;

    /// Resolves when the agent's log may hold events past `last_seq`, or when
    /// `timeout` has passed, whichever comes first. Spurious wake-ups are
    /// fine: the caller reads again.
    fn wait_for_events(
        &self,
        key: &AgentKey,
        last_seq: u64,
        timeout: Duration,
    ) -> impl Future<Output = ()>;

    /// The runtime's clock, in ms since the epoch (wasm32 targets have no
    /// portable clock, so the runtime supplies it).
    fn now_ms(&self) -> i64;
}
