//! The host's KV store: one folder per bucket and one file per key
//! ([`folder`]), writes and deletes made durable a batch at a time
//! ([`batch`]), and the snapshot sagas' blob store over it ([`blobs`]), whose
//! blocking work runs on a few threads of its own ([`io_threads`]).
//!
//! This is storage, as `stasis-sqlite` is for the objects' SQL: the domain
//! reaches it only through its `BlobStore` port, and on the edge Workers KV
//! takes its place.

pub mod batch;
pub mod blobs;
pub mod folder;
mod io_threads;

pub use blobs::HostBlobs;
pub use folder::KvFolder;
