//! Appending a batch.

use super::{AppendBatch, AppendOutcome, AppendSettings, LogState, producers, read, retention};
use crate::{
    DomainError, params,
    sql::{SqlStore, SqlValue},
};
use std::collections::BTreeMap;

/// Appends `batch` in order, all or nothing, and applies retention.
///
/// A batch whose producer stamp was seen before appends nothing and returns
/// the seqs it got the first time.
pub fn append(
    store: &impl SqlStore,
    batch: &AppendBatch,
    settings: &AppendSettings,
) -> Result<AppendOutcome, DomainError> {
    batch.validate()?;
    if settings.max_events == 0 {
        return Err(DomainError::invalid(
            "invalid_settings",
            "max_events must be at least 1",
        ));
    }
    if let Some(stamp) = &batch.producer
        && let Some(original) = producers::earlier_outcome(store, stamp)?
    {
        return Ok(original);
    }

    let state = read::state(store)?;
    let first_seq = state.last_seq + 1;
    let last_seq = insert_events(store, batch, first_seq, settings.now_ms)?;
    let outcome = AppendOutcome {
        first_seq,
        last_seq,
        duplicate: false,
    };
    let grown = LogState {
        first_seq: if state.first_seq == 0 {
            first_seq
        } else {
            state.first_seq
        },
        last_seq,
        event_count: state.event_count + (last_seq - state.last_seq),
    };
    let kept = retention::apply(store, grown, settings.max_events)?;
    write_state(store, &kept)?;
    if let Some(stamp) = &batch.producer {
        producers::remember(store, stamp, &outcome)?;
    }
    Ok(outcome)
}

/// Rows per `INSERT`: a batch reaches the store in a few statements
/// instead of one per event (on the host each statement is a call through
/// the component's `sql` import, on the edge a Durable Object SQL call),
/// and 16 rows of 5 values stay under Durable Object SQL's 100 bound
/// parameters per statement.
const ROWS_PER_INSERT: usize = 16;

/// The `INSERT` of `rows` events (at most [`ROWS_PER_INSERT`] distinct
/// texts, so the store's statement cache keeps them all).
fn insert_statement(rows: usize) -> String {
    let mut sql = String::with_capacity(80 + rows * 17);
    sql.push_str("INSERT INTO events (seq, type, session_id, data, created_at) VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push_str("(?, ?, ?, ?, ?)");
    }
    sql
}

/// Inserts the batch's events from `first_seq` on and updates the sessions
/// they name; answers the last seq given.
fn insert_events(
    store: &impl SqlStore,
    batch: &AppendBatch,
    first_seq: u64,
    now_ms: i64,
) -> Result<u64, DomainError> {
    let mut seq = first_seq - 1;
    let mut touched_sessions: BTreeMap<&str, SessionDelta> = BTreeMap::new();
    for rows in batch.events.chunks(ROWS_PER_INSERT) {
        let mut params: Vec<SqlValue> = Vec::with_capacity(rows.len() * 5);
        for event in rows {
            seq += 1;
            params.push(seq.into());
            params.push(event.event_type.as_str().into());
            params.push(event.session_id.as_deref().into());
            params.push(event.data.as_str().into());
            params.push(now_ms.into());
            if let Some(session) = &event.session_id {
                touched_sessions
                    .entry(session)
                    .and_modify(|delta| {
                        delta.last_seq = seq;
                        delta.count += 1;
                    })
                    .or_insert(SessionDelta {
                        first_seq: seq,
                        last_seq: seq,
                        count: 1,
                    });
            }
        }
        store.run(&insert_statement(rows.len()), params)?;
    }
    for (session, delta) in touched_sessions {
        record_session_events(store, session, &delta, now_ms)?;
    }
    Ok(seq)
}

/// How one batch changes one session.
struct SessionDelta {
    first_seq: u64,
    last_seq: u64,
    count: u64,
}

/// Creates the session on its first event, or extends it.
fn record_session_events(
    store: &impl SqlStore,
    session: &str,
    delta: &SessionDelta,
    now_ms: i64,
) -> Result<(), DomainError> {
    store.run(
        "INSERT INTO sessions (session_id, first_seq, last_seq, event_count, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT (session_id) DO UPDATE SET
            first_seq = CASE WHEN sessions.event_count = 0 THEN excluded.first_seq ELSE sessions.first_seq END,
            last_seq = excluded.last_seq,
            event_count = sessions.event_count + excluded.event_count,
            updated_at = excluded.updated_at",
        params![session, delta.first_seq, delta.last_seq, delta.count, now_ms],
    )?;
    Ok(())
}

fn write_state(store: &impl SqlStore, state: &LogState) -> Result<(), DomainError> {
    store.run(
        "UPDATE log_state SET first_seq = ?1, last_seq = ?2, event_count = ?3 WHERE id = 1",
        params![state.first_seq, state.last_seq, state.event_count],
    )?;
    Ok(())
}
