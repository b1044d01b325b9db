//! An agent object's state beside its event log: the agent's record, its
//! sessions, its checkpoint, its key-value memory, and export / import of
//! all of it as one manifest (exported in pages, imported in stages).
//!
//! Everything lives in the agent's one SQL database, next to the event
//! log's tables (`event_log::migrate` creates those; [`migrate`] creates
//! `agent_record`, `checkpoint` and `memory`). Each call runs inside one
//! transaction the runtime owns, so nothing here says BEGIN or SAVEPOINT;
//! every rule is checked before the first write, so a refused call changes
//! nothing even without the rollback.
//!
//! Two choices worth knowing:
//! - Deleting a session removes its events but leaves the log's `first_seq`
//!   where retention put it: `first_seq` is the retention horizon, and a
//!   deliberate deletion must not expire the cursors of readers that lost
//!   nothing. `last_seq` never goes down, so seqs are never reused.
//! - Destroying an agent (and importing, which starts with the same wipe)
//!   resets the log to `0/0/0`: a destroyed agent is gone, and the next
//!   append gets seq 1 again. Producer stamps are forgotten with it.
//!
//! Snapshots are mostly not handled here: [`DestroyAgent`](StateCall::DestroyAgent)
//! leaves the snapshot tables alone and export leaves `snapshot` to the
//! snapshot rules; an import's commit switches to the snapshot the runtime
//! staged for it ([`crate::snapshot::staged`]).

mod call;
mod checkpoint;
mod checks;
mod export;
mod import;
mod manifest;
mod memory;
mod raw_json;
mod record;
pub mod restore;
mod schema;
mod sessions;
pub mod staging;

pub use call::{StateCall, StateReply, execute, is_write};
pub use checkpoint::{Checkpoint, CheckpointStored};
pub use export::{EXPORT_PAGE_BYTES, EXPORT_PAGE_ROWS, ExportHead, ExportPage};
pub use import::{ImportSummary, check_format, check_snapshot_header, import_manifest};
pub use manifest::{
    MANIFEST_FORMAT, Manifest, ManifestAgent, ManifestChunk, ManifestEvent, ManifestMemory,
    ManifestSession, ManifestSnapshot,
};
pub use memory::{DEFAULT_MEMORY_LIST_LIMIT, MAX_MEMORY_LIST_LIMIT, MemoryEntry};
pub use record::{AgentRecord, AgentSummary, DestroyOutcome, MAX_ROLE_BYTES, check_registration};
pub use sessions::{SESSION_STATUSES, SessionDeleted, SessionRecord};
pub use staging::{ImportBatch, ImportCall, ImportChecked, ImportProgress, ImportReply};

/// The largest checkpoint, memory value or metadata document, in bytes of
/// its JSON text.
pub const MAX_DOCUMENT_BYTES: u64 = 1_048_576;

/// Direct access to each concern, for callers that need one piece of state
/// without a call (e.g. the dispatch reading the checkpoint).
pub mod read {
    pub use super::checkpoint::load as checkpoint;
    pub use super::export::{head as export_head, whole as export};
    pub use super::memory::find as memory;
    pub use super::record::summary as agent;
    pub use super::sessions::{find as session, list as sessions};
}

/// Creates the agent record, checkpoint, memory and import staging tables
/// if missing. Run `event_log::migrate` too: sessions and the log live
/// there.
pub fn migrate(store: &impl crate::sql::SqlStore) -> Result<(), crate::DomainError> {
    schema::migrate(store)?;
    // Destroy, import and a deleted session empty the summary cache.
    crate::summary_cache::migrate(store)?;
    // Checkpoint and memory writes keep what they replace.
    crate::history::migrate(store)?;
    staging::migrate(store)
}
