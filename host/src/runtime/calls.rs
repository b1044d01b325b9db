//! What the host's objects are asked to do, and what they answer.

use stasis_domain::{
    agent::{AgentCall, AgentReply},
    town::{TownCall, TownReply},
};

/// One call on an object.
pub enum ObjectCall {
    /// An agent call: event-log calls go to the event-log component, the
    /// rest to the session component.
    Agent(AgentCall),
    /// A town call, run by the session component's `town` export.
    Town(TownCall),
}

/// The answer to an [`ObjectCall`].
#[derive(Debug)]
pub enum ObjectAnswer {
    /// To an agent call.
    Agent(AgentReply),
    /// To a town call.
    Town(TownReply),
}
