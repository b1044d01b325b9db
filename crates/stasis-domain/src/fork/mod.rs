//! Forks: an agent started from another agent's state at a point of its
//! history, in the same town, whose storage names its source's chunks
//! rather than copying them.
//!
//! # How it works
//!
//! - **The point** is resolved on the source ([`crate::history::point`]):
//!   the seq, and the kilo.db, workspace, checkpoint and memory versions of
//!   that moment.
//! - **The copy** is an import into the fork's object (the
//!   `agent_state::staging` steps): the events `1..=S`, the sessions that
//!   have any of them, the checkpoint and memory values, and kilo.db and
//!   the workspace as manifests whose chunks the fork *adopts*
//!   ([`crate::chunk_store::origins`]): rows of its own naming the key in
//!   the folder that holds it (its origin). No chunk byte is read or
//!   written.
//! - **Holds** ([`crate::chunk_store::holds`]): before the fork's object
//!   names any of them, each origin holds the chunks the fork takes from
//!   it, so neither its retention nor its collection, nor its destroy, can
//!   take them while the fork lives.
//! - **Reads** find an adopted chunk through the fork's lineage key
//!   ([`crate::chunk_store::lineage`]).
//! - **Lineage** ([`Lineage`], this module's table): the source and seq
//!   (`forked_from`, shown on the agent's record), the ancestors (nearest
//!   first: their folders are the lineage key's), and the origins the fork
//!   holds chunks in: the fork's destroy releases each of those holds.
//!
//! A crash part way leaves at worst a hold nothing reads (the fork never
//! committed: a retried fork to the same id replaces it, and destroying
//! that id releases it), never a fork naming a chunk nobody holds.

mod call;
mod lineage;

pub use call::{ForkCall, ForkReply, execute, is_write};
pub use lineage::{ForkedFrom, Lineage};

use crate::sql::{SqlStore, StorageError};

/// Creates the lineage table if it is missing.
pub fn migrate(store: &impl SqlStore) -> Result<(), StorageError> {
    store.run(lineage::TABLE, Vec::new())
}
