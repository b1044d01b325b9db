//! The components, the objects they run on, and the port over them.

pub mod bindings;
pub mod components;
pub mod guests;
pub mod kv;
pub mod object;
pub mod objects;
pub mod open_objects;
pub mod readiness;
mod summariser;
mod tidy;

pub use objects::HostObjects;

/// Call groups that may run at once (each on a blocking thread); the
/// instance pool and the async runtime are sized from it.
pub const MAX_GROUPS: usize = 128;

/// The async runtime a host serves on: one blocking thread per call group
/// that may run at once.
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(MAX_GROUPS)
        .build()
}
