//! Retention: keep the newest `max_events` events; the oldest go first.

use super::LogState;
use crate::{
    DomainError, params,
    sql::{RowExt, SqlStore},
};

/// Drops the oldest events beyond `max_events` and returns the new state.
pub(super) fn apply(
    store: &impl SqlStore,
    state: LogState,
    max_events: u64,
) -> Result<LogState, DomainError> {
    if state.event_count <= max_events {
        return Ok(state);
    }
    // event_count is exact, so the oldest event kept is the one just past
    // the `excess` oldest: a short walk from the bottom, not N from the top.
    let excess = state.event_count - max_events;
    let Some(row) = store.first_row(
        "SELECT seq FROM events ORDER BY seq LIMIT 1 OFFSET ?1",
        params![excess],
    )?
    else {
        return Ok(state);
    };
    let horizon = row.uint(0)?;
    let shrinking = store.execute(
        "SELECT session_id, COUNT(*) FROM events WHERE seq < ?1 AND session_id IS NOT NULL GROUP BY session_id",
        params![horizon],
    )?;
    store.run("DELETE FROM events WHERE seq < ?1", params![horizon])?;
    for row in shrinking {
        let session = row.text(0)?;
        let dropped = row.uint(1)?;
        store.run(
            "UPDATE sessions SET
                event_count = event_count - ?2,
                first_seq = COALESCE((SELECT MIN(seq) FROM events WHERE session_id = ?1), first_seq)
             WHERE session_id = ?1",
            params![session, dropped],
        )?;
    }
    Ok(LogState {
        first_seq: horizon,
        last_seq: state.last_seq,
        event_count: max_events,
    })
}
