//! Every mapping between the WIT types of `wit/` and the domain's, on the
//! guests' side: the `sql` import's values and errors, the event log's
//! records, and the `error` variant every export answers with. The host's
//! side of each is in `host/src/runtime/guests.rs`.

use crate::bindings::stasis::objects::{sql, types};
use stasis_domain::{
    DomainError, Refusal,
    event_log::{
        AppendBatch, AppendOutcome, AppendSettings, NewEvent, ProducerStamp, ReadPage, ReadQuery,
    },
    sql::{SqlValue, StorageError},
};

/// A domain SQL value as the `sql` import takes it.
pub fn wit_value(value: SqlValue) -> sql::Value {
    match value {
        SqlValue::Null => sql::Value::Null,
        SqlValue::Integer(v) => sql::Value::Integer(v),
        SqlValue::Real(v) => sql::Value::Real(v),
        SqlValue::Text(v) => sql::Value::Text(v),
        SqlValue::Blob(v) => sql::Value::Blob(v),
    }
}

/// A value the `sql` import answered, as the domain's.
pub fn sql_value(value: sql::Value) -> SqlValue {
    match value {
        sql::Value::Null => SqlValue::Null,
        sql::Value::Integer(v) => SqlValue::Integer(v),
        sql::Value::Real(v) => SqlValue::Real(v),
        sql::Value::Text(v) => SqlValue::Text(v),
        sql::Value::Blob(v) => SqlValue::Blob(v),
    }
}

/// The `sql` import's error as the domain's storage error.
pub fn storage_error(err: sql::SqlError) -> StorageError {
    match err {
        sql::SqlError::ConstraintViolation(m) => StorageError::ConstraintViolation(m),
        sql::SqlError::TooBig(m) => StorageError::TooBig(m),
        sql::SqlError::InvalidStatement(m) => StorageError::InvalidStatement(m),
        sql::SqlError::Io(m) => StorageError::Io(m),
    }
}

/// An append as the domain's batch.
pub fn append_batch(
    events: Vec<types::NewEvent>,
    producer: Option<types::ProducerStamp>,
) -> AppendBatch {
    AppendBatch {
        events: events
            .into_iter()
            .map(|e| NewEvent {
                event_type: e.event_type,
                session_id: e.session_id,
                data: e.data,
            })
            .collect(),
        producer: producer.map(|p| ProducerStamp {
            producer_id: p.producer_id,
            producer_seq: p.producer_seq,
        }),
    }
}

/// An append's settings as the domain's.
pub fn append_settings(settings: types::AppendSettings) -> AppendSettings {
    AppendSettings {
        now_ms: settings.now,
        max_events: settings.max_events,
    }
}

/// The domain's append outcome as the export answers it.
pub fn append_outcome(outcome: AppendOutcome) -> types::AppendOutcome {
    types::AppendOutcome {
        first_seq: outcome.first_seq,
        last_seq: outcome.last_seq,
        duplicate: outcome.duplicate,
    }
}

/// A read query as the domain's.
pub fn read_query(query: types::ReadQuery) -> ReadQuery {
    ReadQuery {
        after: query.after,
        limit: query.limit,
        session_id: query.session_id,
        event_type: query.event_type,
    }
}

/// The domain's page of events as the export answers it.
pub fn read_page(page: ReadPage) -> types::ReadPage {
    types::ReadPage {
        events: page
            .events
            .into_iter()
            .map(|e| types::Event {
                seq: e.seq,
                event_type: e.event_type,
                session_id: e.session_id,
                data: e.data,
                created_at: e.created_at_ms,
            })
            .collect(),
        next_after: page.next_after,
        has_more: page.has_more,
        first_seq: page.first_seq,
        last_seq: page.last_seq,
    }
}

/// A domain error as the WIT `error` variant.
pub fn wit_error(err: DomainError) -> types::Error {
    let refusal = |r: Refusal| types::Refusal {
        code: r.code,
        message: r.message,
    };
    match err {
        DomainError::InvalidInput(r) => types::Error::InvalidInput(refusal(r)),
        DomainError::NotFound(r) => types::Error::NotFound(refusal(r)),
        DomainError::Conflict(r) => types::Error::Conflict(refusal(r)),
        DomainError::PreconditionFailed(r) => types::Error::PreconditionFailed(refusal(r)),
        DomainError::TooLarge {
            code,
            message,
            limit,
        } => types::Error::TooLarge(types::LimitExceeded {
            code,
            message,
            limit,
        }),
        DomainError::CursorExpired { first_seq } => types::Error::CursorExpired(first_seq),
        DomainError::Unavailable(r) => types::Error::Unavailable(refusal(r)),
        // Fences are checked by the host itself, outside the guests; should
        // one come from here, it stays a 409 with its code.
        DomainError::Fenced(f) => types::Error::Conflict(types::Refusal {
            code: f.code,
            message: f.message,
        }),
        DomainError::ChunksMissing { missing } => types::Error::ChunksMissing(missing),
        DomainError::Storage(m) => types::Error::Storage(m),
    }
}
