//! Reading the log.

use super::{Event, LogState, ReadPage, ReadQuery, SessionSummary};
use crate::{
    DomainError, limits, params,
    sql::{Row, RowExt, SqlStore, SqlValue},
};

/// The log's bounds and size.
pub fn state(store: &impl SqlStore) -> Result<LogState, DomainError> {
    let row = store
        .first_row(
            "SELECT first_seq, last_seq, event_count FROM log_state WHERE id = 1",
            Vec::new(),
        )?
        .unwrap_or_default();
    if row.is_empty() {
        return Ok(LogState::default());
    }
    Ok(LogState {
        first_seq: row.uint(0)?,
        last_seq: row.uint(1)?,
        event_count: row.uint(2)?,
    })
}

/// Events with seq > `query.after`, in order, filtered and limited.
pub fn read(store: &impl SqlStore, query: &ReadQuery) -> Result<ReadPage, DomainError> {
    if query.limit == 0 || query.limit > limits::MAX_READ_LIMIT {
        return Err(DomainError::invalid(
            "invalid_request",
            format!("limit must be 1 to {}", limits::MAX_READ_LIMIT),
        ));
    }
    let state = state(store)?;
    if state.first_seq > 1 && query.after < state.first_seq - 1 {
        return Err(DomainError::CursorExpired {
            first_seq: state.first_seq,
        });
    }

    let mut filter = String::from("seq > ?1");
    let mut params: Vec<SqlValue> = params![query.after];
    if let Some(session) = &query.session_id {
        params.push(session.as_str().into());
        filter.push_str(&format!(" AND session_id = ?{}", params.len()));
    }
    if let Some(event_type) = &query.event_type {
        params.push(event_type.as_str().into());
        filter.push_str(&format!(" AND type = ?{}", params.len()));
    }
    let (through, has_more) = page_bounds(store, &filter, params.clone(), query.limit)?;
    let mut events = Vec::new();
    if let Some(through) = through {
        params.push(through.into());
        let sql = format!(
            "SELECT seq, type, session_id, data, created_at FROM events
             WHERE {filter} AND seq <= ?{} ORDER BY seq",
            params.len()
        );
        let rows = store.execute(&sql, params)?;
        events.reserve(rows.len());
        for row in rows {
            events.push(event_from_row(row)?);
        }
    }
    let next_after = match (has_more, events.last()) {
        (true, Some(last)) => last.seq,
        _ => query.after.max(state.last_seq),
    };
    Ok(ReadPage {
        events,
        next_after,
        has_more,
        first_seq: state.first_seq,
        last_seq: state.last_seq,
    })
}

/// The last seq of the page (`None` for an empty one) and whether more
/// match: at most `limit` events and [`limits::MAX_READ_BYTES`] of data
/// (at least one event). Sizes come first, from the rows' headers
/// (`octet_length` does not load a text's content), so that no more than a
/// page of data is ever loaded, however large the events. The first
/// `limit` matches are counted and sized inside SQLite, one row back: when
/// they fit the byte budget (nearly always) that is the page, and one probe
/// says whether more follow. Only a page over the budget walks the sizes
/// row by row, each row a crossing of the store's boundary.
fn page_bounds(
    store: &impl SqlStore,
    filter: &str,
    params: Vec<SqlValue>,
    limit: u32,
) -> Result<(Option<u64>, bool), DomainError> {
    let mut counted = params.clone();
    counted.push(limit.into());
    let totals = store.first_row(
        &format!(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), MAX(seq) FROM (
                SELECT seq, octet_length(data) AS size FROM events WHERE {filter}
                ORDER BY seq LIMIT ?{})",
            counted.len()
        ),
        counted,
    )?;
    let Some(totals) = totals else {
        return Err(DomainError::Storage(
            "a page's sizes returned no row".into(),
        ));
    };
    let (count, bytes) = (totals.uint(0)?, totals.uint(1)?);
    if count == 0 {
        return Ok((None, false));
    }
    if bytes > limits::MAX_READ_BYTES && count > 1 {
        return page_bounds_row_by_row(store, filter, params, limit);
    }
    let through = totals.uint(2)?;
    let has_more = count == u64::from(limit) && {
        let mut probe = params;
        probe.push(through.into());
        let sql = format!(
            "SELECT 1 FROM events WHERE {filter} AND seq > ?{} LIMIT 1",
            probe.len()
        );
        store.first_row(&sql, probe)?.is_some()
    };
    Ok((Some(through), has_more))
}

/// [`page_bounds`] for a page over the byte budget: the sizes of the
/// `limit + 1` first matches, summed until the budget is passed.
fn page_bounds_row_by_row(
    store: &impl SqlStore,
    filter: &str,
    mut params: Vec<SqlValue>,
    limit: u32,
) -> Result<(Option<u64>, bool), DomainError> {
    params.push((limit + 1).into());
    let sizes = store.execute(
        &format!(
            "SELECT seq, octet_length(data) FROM events WHERE {filter} ORDER BY seq LIMIT ?{}",
            params.len()
        ),
        params,
    )?;
    let mut through = None;
    let mut bytes = 0u64;
    for (taken, row) in sizes.iter().enumerate() {
        bytes = bytes.saturating_add(row.uint(1)?);
        let full = taken == limit as usize || (bytes > limits::MAX_READ_BYTES && taken > 0);
        if full {
            return Ok((through, true));
        }
        through = Some(row.uint(0)?);
    }
    Ok((through, false))
}

fn event_from_row(row: Row) -> Result<Event, DomainError> {
    let seq = row.uint(0)?;
    let created_at_ms = row.int(4)?;
    let mut columns = row.into_iter();
    let (Some(_), Some(SqlValue::Text(event_type)), Some(session), Some(SqlValue::Text(data))) = (
        columns.next(),
        columns.next(),
        columns.next(),
        columns.next(),
    ) else {
        return Err(DomainError::Storage(format!(
            "event {seq}: unexpected row shape"
        )));
    };
    let session_id = match session {
        SqlValue::Text(s) => Some(s),
        _ => None,
    };
    Ok(Event {
        seq,
        event_type,
        session_id,
        data,
        created_at_ms,
    })
}

/// Sessions named by the log, oldest first.
pub fn sessions(store: &impl SqlStore) -> Result<Vec<SessionSummary>, DomainError> {
    let rows = store.execute(
        "SELECT session_id, status, first_seq, last_seq, event_count, created_at, updated_at
         FROM sessions ORDER BY created_at, session_id",
        Vec::new(),
    )?;
    rows.iter()
        .map(|row| {
            Ok(SessionSummary {
                session_id: row.text(0)?.to_owned(),
                status: row.text(1)?.to_owned(),
                first_seq: row.uint(2)?,
                last_seq: row.uint(3)?,
                event_count: row.uint(4)?,
                created_at_ms: row.int(5)?,
                updated_at_ms: row.int(6)?,
            })
        })
        .collect()
}

/// Every retained event whose type is one of `types`, in seq order,
/// optionally of one session only.
pub fn of_types(
    store: &impl SqlStore,
    types: &[&str],
    session_id: Option<&str>,
) -> Result<Vec<Event>, DomainError> {
    let placeholders: Vec<String> = (1..=types.len()).map(|i| format!("?{i}")).collect();
    let mut sql = format!(
        "SELECT seq, type, session_id, data, created_at FROM events WHERE type IN ({})",
        placeholders.join(", ")
    );
    let mut params: Vec<SqlValue> = types.iter().map(|t| SqlValue::from(*t)).collect();
    if let Some(session) = session_id {
        params.push(SqlValue::from(session));
        sql.push_str(&format!(" AND session_id = ?{}", params.len()));
    }
    sql.push_str(" ORDER BY seq");
    store
        .execute(&sql, params)?
        .into_iter()
        .map(event_from_row)
        .collect()
}
