//! The components, the objects they run on, and the port over them.

pub mod agent_object;
pub mod bindings;
pub mod components;
pub mod guest_state;
pub mod objects;

pub use objects::HostObjects;
