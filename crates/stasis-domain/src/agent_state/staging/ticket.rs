//! Which import is in progress: its ticket, its id and parts, and what it
//! has staged so far.
//!
//! Every `Begin` hands out a new ticket and clears whatever an earlier
//! import left (a client that went away, a process killed mid-import), so
//! at most one import is staged at a time and a new one always wins. Every
//! later call names its ticket; once another import began (or this one
//! ended) the ticket is stale and the call is refused.

use super::schema::SWAPPED;
use crate::{
    DomainError, Refusal, params, snapshot,
    sql::{RowExt, SqlStore},
};

/// The import in progress, as its calls see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Staging {
    pub ticket: u64,
    pub import_id: Option<String>,
    pub parts: u64,
    pub events: u64,
    pub last_seq: u64,
    pub sessions: u64,
    pub memory: u64,
}

/// Starts an import: clears any staged one, hands out the next ticket.
pub(super) fn begin(store: &impl SqlStore, import_id: Option<&str>) -> Result<u64, DomainError> {
    clear(store)?;
    let last = store
        .first_row("SELECT ticket FROM import_state WHERE id = 1", Vec::new())?
        .map(|row| row.uint(0))
        .transpose()?
        .unwrap_or(0);
    let ticket = last + 1;
    store.run(
        "INSERT INTO import_state
            (id, ticket, active, import_id, parts, events, last_seq, sessions, memory)
         VALUES (1, ?1, 1, ?2, 0, 0, 0, 0, 0)
         ON CONFLICT (id) DO UPDATE SET ticket = excluded.ticket, active = 1,
            import_id = excluded.import_id, parts = 0, events = 0, last_seq = 0,
            sessions = 0, memory = 0",
        params![ticket, import_id],
    )?;
    Ok(ticket)
}

/// The ticket of import `import_id` when `part` is the part it expects next.
pub(super) fn resume(
    store: &impl SqlStore,
    import_id: &str,
    part: u64,
) -> Result<u64, DomainError> {
    let staging = load(store)?.filter(|s| s.import_id.as_deref() == Some(import_id));
    let Some(staging) = staging else {
        return Err(DomainError::NotFound(Refusal::new(
            "import_not_found",
            format!(
                "no import {import_id:?} is in progress on this agent: part 1 begins one, and \
                 an import ends when it commits, fails, or another import begins"
            ),
        )));
    };
    let expected = staging.parts + 1;
    if part != expected {
        return Err(DomainError::Conflict(Refusal::new(
            "import_part_out_of_order",
            format!("import {import_id:?} expects part {expected} next, not part {part}"),
        )));
    }
    Ok(staging.ticket)
}

/// The import in progress when `ticket` is still its ticket.
pub(super) fn current(store: &impl SqlStore, ticket: u64) -> Result<Staging, DomainError> {
    load(store)?
        .filter(|staging| staging.ticket == ticket)
        .ok_or_else(|| {
            DomainError::Conflict(Refusal::new(
                "import_superseded",
                "this import is no longer in progress: another import of the agent began, or \
                 it was aborted; nothing of it was applied",
            ))
        })
}

/// Writes back the counts of what is staged.
pub(super) fn save_counts(store: &impl SqlStore, staging: &Staging) -> Result<(), DomainError> {
    store.run(
        "UPDATE import_state SET parts = ?1, events = ?2, last_seq = ?3, sessions = ?4,
            memory = ?5 WHERE id = 1",
        params![
            staging.parts,
            staging.events,
            staging.last_seq,
            staging.sessions,
            staging.memory
        ],
    )?;
    Ok(())
}

/// Ends the import in progress if `ticket` is its ticket: everything it
/// staged goes. A stale ticket changes nothing.
pub(super) fn abort(store: &impl SqlStore, ticket: u64) -> Result<(), DomainError> {
    if load(store)?.is_some_and(|staging| staging.ticket == ticket) {
        clear(store)?;
    }
    Ok(())
}

/// Empties every staging table and marks no import in progress (the ticket
/// counter stays). A staged snapshot's KV key is left for a sweep.
pub(crate) fn clear(store: &impl SqlStore) -> Result<(), DomainError> {
    for (_, staged, _) in SWAPPED {
        store.run(&format!("DELETE FROM {staged}"), Vec::new())?;
    }
    for statement in [
        "DELETE FROM import_agent",
        "DELETE FROM import_checkpoint",
        "UPDATE import_state SET active = 0, import_id = NULL WHERE id = 1",
    ] {
        store.run(statement, Vec::new())?;
    }
    crate::workspace_store::staged::clear(store)?;
    snapshot::staged::clear(store)
}

fn load(store: &impl SqlStore) -> Result<Option<Staging>, DomainError> {
    let Some(row) = store.first_row(
        "SELECT ticket, import_id, parts, events, last_seq, sessions, memory
         FROM import_state WHERE id = 1 AND active = 1",
        Vec::new(),
    )?
    else {
        return Ok(None);
    };
    Ok(Some(Staging {
        ticket: row.uint(0)?,
        import_id: row.opt_text(1)?.map(str::to_owned),
        parts: row.uint(2)?,
        events: row.uint(3)?,
        last_seq: row.uint(4)?,
        sessions: row.uint(5)?,
        memory: row.uint(6)?,
    }))
}
