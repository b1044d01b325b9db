//! An import in stages, so that a manifest of any size the contract allows
//! replaces the agent's state atomically without ever being held whole.
//!
//! 1. `Begin` clears whatever an earlier import left staged and hands out a
//!    ticket (a multi-part import names itself and its parts; `Resume`
//!    gives a later part the same ticket).
//! 2. `Stage` checks a batch of the manifest (events, sessions, memory, the
//!    record, the checkpoint, a snapshot whose bytes are already stored)
//!    against the rules and against what is staged before it (seqs
//!    strictly increasing, ids unique, retention's count), and writes it to
//!    the staging tables, which no reader ever looks at.
//! 3. `Check` applies the rules that need the whole manifest, and `Commit`
//!    does so again, then swaps the staged tables in for the live ones, in
//!    the one transaction of its call: the agent is replaced whole or not
//!    at all.
//!
//! A refused batch refuses the whole import: the caller aborts it, and the
//! live state was never touched. A process killed mid-import leaves only
//! staged rows, cleared by the next `Begin` (or `DestroyAgent`).

mod call;
mod commit;
mod schema;
mod stage;
mod ticket;

pub use call::{ImportBatch, ImportCall, ImportChecked, ImportProgress, ImportReply};
pub(super) use commit::commit;
pub(super) use schema::migrate;
pub(super) use stage::stage;
pub(crate) use ticket::clear;

use crate::{DomainError, object_env::ObjectEnv, sql::SqlStore};

/// Begins an import with no id (one call or one request).
pub(super) fn begin(store: &impl SqlStore, import_id: Option<&str>) -> Result<u64, DomainError> {
    ticket::begin(store, import_id)
}

/// Runs one step against the agent's store, inside the caller's
/// transaction (a refused step rolls back what it staged).
pub fn execute(
    store: &impl SqlStore,
    call: &ImportCall,
    env: &ObjectEnv,
) -> Result<ImportReply, DomainError> {
    Ok(match call {
        ImportCall::Begin { import_id } => {
            if let Some(id) = import_id {
                crate::ids::check_id("import_id", id)?;
            }
            ImportReply::Ticket(ticket::begin(store, import_id.as_deref())?)
        }
        ImportCall::Resume { import_id, part } => {
            ImportReply::Ticket(ticket::resume(store, import_id, *part)?)
        }
        ImportCall::Stage { ticket, batch } => {
            ImportReply::Staged(stage::stage(store, *ticket, batch, env)?)
        }
        ImportCall::EndPart { ticket } => ImportReply::Staged(stage::end_part(store, *ticket)?),
        ImportCall::Check { ticket } => ImportReply::Checked(commit::check(
            store,
            &ticket::current(store, *ticket)?,
            env,
        )?),
        ImportCall::Commit { ticket } => {
            ImportReply::Committed(commit::commit(store, *ticket, env)?)
        }
        ImportCall::Abort { ticket } => {
            ticket::abort(store, *ticket)?;
            ImportReply::Aborted
        }
    })
}
