//! The rules of stasis, written once and run everywhere.
//!
//! This crate knows nothing about wasm, wasmtime, Workers or HTTP. It states
//! what an agent object (its event log, sessions, checkpoint, memory,
//! export/import and snapshot metadata), a town object (eviction, heartbeats,
//! registry, deferred dispatches) and the conversation rebuild must do, on top
//! of storage *ports*:
//!
//! - [`sql::SqlStore`]: one object's SQL database, synchronous like Durable
//!   Object SQL and like a component's `sql` import. Each call into this crate
//!   runs inside one transaction the adapter owns.
//! - [`chunk_store::ports::ChunkObject`] and
//!   [`chunk_store::ports::BlobStore`]: the agent object and the KV store
//!   as the chunk store's saga reaches them (chunks in KV, their rows and
//!   the versions' manifests in the object), and
//!   [`snapshot::ports::SnapshotObject`], the object as kilo.db's snapshot
//!   sagas reach it.
//!
//! The wasm components, the local host and the edge worker are adapters over
//! these functions; none of them restates a rule.
//!
//! ```
//! # use stasis_domain::{event_log::{self, AppendBatch, NewEvent, AppendSettings}, sql::SqlStore};
//! # fn demo(store: &impl SqlStore) -> Result<(), stasis_domain::DomainError> {
//! event_log::migrate(store)?;
//! let batch = AppendBatch::new(vec![NewEvent::new("message.created", None, r#"{"text":"hi"}"#)]);
//! let outcome = event_log::append(store, &batch, &AppendSettings::new(0))?;
//! assert_eq!((outcome.first_seq, outcome.last_seq), (1, 1));
//! # Ok(()) }
//! ```

pub mod agent;
pub mod agent_state;
pub mod chunk_store;
pub mod conversation;
pub mod error;
pub mod event_log;
pub mod fence;
pub mod fork;
pub mod history;
pub mod ids;
pub mod json_limits;
pub mod limits;
pub mod object_env;
pub mod operation;
pub mod recall;
pub mod restore;
pub mod snapshot;
pub mod sql;
pub mod sql_rows;
pub mod summary_cache;
pub mod town;
pub mod typed_operation;
pub mod wire;
pub mod workspace;
pub mod workspace_store;

pub use error::{DomainError, FenceRefusal, Refusal};
