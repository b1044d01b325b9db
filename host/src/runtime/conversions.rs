//! Every mapping between the WIT types of `wit/` and the domain's (or the
//! host's storage's) types, in one place: the typed event-log records, the
//! `sql` import's values and errors, and the `error` variant every export
//! answers with.

use super::bindings::imports::stasis::objects::{sql, types};
use stasis_domain::{
    DomainError, Refusal,
    agent::ObjectEnv,
    event_log::{AppendBatch, AppendOutcome, Event, ReadPage, ReadQuery},
    sql::{SqlValue, StorageError},
};
use stasis_sqlite::ValueRef;

/// An append's events, as the event-log export takes them.
pub fn new_events(batch: &AppendBatch) -> Vec<types::NewEvent> {
    batch
        .events
        .iter()
        .map(|e| types::NewEvent {
            event_type: e.event_type.clone(),
            session_id: e.session_id.clone(),
            data: e.data.clone(),
        })
        .collect()
}

/// An append's producer stamp, as the event-log export takes it.
pub fn producer_stamp(batch: &AppendBatch) -> Option<types::ProducerStamp> {
    batch.producer.as_ref().map(|p| types::ProducerStamp {
        producer_id: p.producer_id.clone(),
        producer_seq: p.producer_seq,
    })
}

/// The settings of an append.
pub fn append_settings(env: &ObjectEnv) -> types::AppendSettings {
    types::AppendSettings {
        now: env.now_ms,
        max_events: env.max_events,
    }
}

/// The event-log export's append outcome.
pub fn append_outcome(outcome: types::AppendOutcome) -> AppendOutcome {
    AppendOutcome {
        first_seq: outcome.first_seq,
        last_seq: outcome.last_seq,
        duplicate: outcome.duplicate,
    }
}

/// A read query, as the event-log export takes it.
pub fn read_query(query: &ReadQuery) -> types::ReadQuery {
    types::ReadQuery {
        after: query.after,
        limit: query.limit,
        session_id: query.session_id.clone(),
        event_type: query.event_type.clone(),
    }
}

/// The event-log export's page of events.
pub fn read_page(page: types::ReadPage) -> ReadPage {
    ReadPage {
        events: page
            .events
            .into_iter()
            .map(|e| Event {
                seq: e.seq,
                event_type: e.event_type,
                session_id: e.session_id,
                data: e.data,
                created_at_ms: e.created_at,
            })
            .collect(),
        next_after: page.next_after,
        has_more: page.has_more,
        first_seq: page.first_seq,
        last_seq: page.last_seq,
    }
}

/// The WIT error variant as the domain's error.
pub fn domain_error(err: types::Error) -> DomainError {
    use types::Error as E;
    let refusal = |r: types::Refusal| Refusal::new(r.code, r.message);
    match err {
        E::InvalidInput(r) => DomainError::InvalidInput(refusal(r)),
        E::NotFound(r) => DomainError::NotFound(refusal(r)),
        E::Conflict(r) => DomainError::Conflict(refusal(r)),
        E::PreconditionFailed(r) => DomainError::PreconditionFailed(refusal(r)),
        E::TooLarge(l) => DomainError::TooLarge {
            code: l.code,
            message: l.message,
            limit: l.limit,
        },
        E::CursorExpired(first_seq) => DomainError::CursorExpired { first_seq },
        E::Unavailable(r) => DomainError::Unavailable(refusal(r)),
        E::ChunksMissing(missing) => DomainError::ChunksMissing { missing },
        E::Storage(m) => DomainError::Storage(m),
    }
}

/// A `sql` import parameter as the domain's SQL value.
pub fn sql_value(value: sql::Value) -> SqlValue {
    match value {
        sql::Value::Null => SqlValue::Null,
        sql::Value::Integer(v) => SqlValue::Integer(v),
        sql::Value::Real(v) => SqlValue::Real(v),
        sql::Value::Text(v) => SqlValue::Text(v),
        sql::Value::Blob(v) => SqlValue::Blob(v),
    }
}

/// A column SQLite returned, as the `sql` import answers it.
pub fn wit_value(value: ValueRef<'_>) -> sql::Value {
    match value {
        ValueRef::Null => sql::Value::Null,
        ValueRef::Integer(v) => sql::Value::Integer(v),
        ValueRef::Real(v) => sql::Value::Real(v),
        ValueRef::Text(v) => sql::Value::Text(stasis_sqlite::text_from(v)),
        ValueRef::Blob(v) => sql::Value::Blob(v.to_vec()),
    }
}

/// A storage error as the `sql` import answers it.
pub fn sql_error(err: StorageError) -> sql::SqlError {
    use StorageError as E;
    match err {
        E::ConstraintViolation(m) => sql::SqlError::ConstraintViolation(m),
        E::TooBig(m) => sql::SqlError::TooBig(m),
        E::InvalidStatement(m) => sql::SqlError::InvalidStatement(m),
        E::Io(m) | E::Shape(m) => sql::SqlError::Io(m),
    }
}
