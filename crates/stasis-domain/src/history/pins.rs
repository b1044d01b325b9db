//! Named pins: a point of the log (a seq) whose versions stay, whatever
//! retention says, until the pin goes. A restore's undo handle or a fork's
//! fork point can be one.

use crate::{
    DomainError, Refusal, event_log, ids, params,
    sql::{Row, RowExt, SqlStore},
};
use serde::{Deserialize, Serialize};

/// The most pins an agent holds.
pub const MAX_PINS: u64 = 1_000;

/// A named pin.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// Its name, an id.
    pub name: String,
    /// The point it holds: every version this seq resolves to stays.
    pub seq: u64,
    /// When it was set, ms since the epoch.
    pub created_at: i64,
}

/// Sets pin `name` at `seq` (the log's last seq when `None`); answers the
/// pin and whether it is new. A seq past the log's last is refused (400),
/// and so is a new pin past [`MAX_PINS`] (409 `too_many_pins`).
pub fn put(
    store: &impl SqlStore,
    name: &str,
    seq: Option<u64>,
    now_ms: i64,
) -> Result<(Pin, bool), DomainError> {
    ids::check_id("pin", name)?;
    let last_seq = event_log::state(store)?.last_seq;
    let seq = seq.unwrap_or(last_seq);
    if seq > last_seq {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("seq {seq} is past the log's last seq ({last_seq})"),
        ));
    }
    let existed = find(store, name)?.is_some();
    if !existed && count(store)? >= MAX_PINS {
        return Err(DomainError::Conflict(Refusal::new(
            "too_many_pins",
            format!("an agent holds at most {MAX_PINS} pins; delete one first"),
        )));
    }
    store.run(
        "INSERT OR REPLACE INTO history_pins (name, seq, created_at) VALUES (?1, ?2, ?3)",
        params![name, seq, now_ms],
    )?;
    let pin = Pin {
        name: name.to_owned(),
        seq,
        created_at: now_ms,
    };
    Ok((pin, !existed))
}

/// Pin `name`, or 404 `pin_not_found`.
pub fn get(store: &impl SqlStore, name: &str) -> Result<Pin, DomainError> {
    ids::check_id("pin", name)?;
    find(store, name)?.ok_or_else(|| not_found(name))
}

/// Every pin, by name.
pub fn list(store: &impl SqlStore) -> Result<Vec<Pin>, DomainError> {
    store
        .execute(
            "SELECT name, seq, created_at FROM history_pins ORDER BY name",
            Vec::new(),
        )?
        .iter()
        .map(from_row)
        .collect()
}

/// Removes pin `name` (404 `pin_not_found` when there is none); what it
/// held goes with later writes, as retention says.
pub fn delete(store: &impl SqlStore, name: &str) -> Result<(), DomainError> {
    ids::check_id("pin", name)?;
    if find(store, name)?.is_none() {
        return Err(not_found(name));
    }
    store.run("DELETE FROM history_pins WHERE name = ?1", params![name])?;
    Ok(())
}

fn find(store: &impl SqlStore, name: &str) -> Result<Option<Pin>, DomainError> {
    store
        .first_row(
            "SELECT name, seq, created_at FROM history_pins WHERE name = ?1",
            params![name],
        )?
        .map(|row| from_row(&row))
        .transpose()
}

fn count(store: &impl SqlStore) -> Result<u64, DomainError> {
    let row = store.first_row("SELECT COUNT(*) FROM history_pins", Vec::new())?;
    Ok(row.map(|row| row.uint(0)).transpose()?.unwrap_or(0))
}

fn from_row(row: &Row) -> Result<Pin, DomainError> {
    Ok(Pin {
        name: row.text(0)?.to_owned(),
        seq: row.uint(1)?,
        created_at: row.int(2)?,
    })
}

fn not_found(name: &str) -> DomainError {
    DomainError::NotFound(Refusal::new(
        "pin_not_found",
        format!("the agent has no pin named {name:?}"),
    ))
}
