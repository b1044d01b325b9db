//! The domain's SQL port over Durable Object SQL.

use stasis_domain::sql::{Row, SqlStore, SqlValue, StorageError};
use worker::{SqlStorage, SqlStorageValue};

/// One Durable Object's SQLite database.
#[derive(Clone)]
pub struct DoSql(pub SqlStorage);

impl SqlStore for DoSql {
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError> {
        let bindings: Vec<SqlStorageValue> = params.into_iter().map(to_do).collect();
        let cursor = self.0.exec(statement, bindings).map_err(classify)?;
        cursor
            .raw()
            .map(|row| {
                row.map(|values| values.into_iter().map(from_do).collect())
                    .map_err(classify)
            })
            .collect()
    }
}

fn to_do(value: SqlValue) -> SqlStorageValue {
    match value {
        SqlValue::Null => SqlStorageValue::Null,
        SqlValue::Integer(v) => SqlStorageValue::Integer(v),
        SqlValue::Real(v) => SqlStorageValue::Float(v),
        SqlValue::Text(v) => SqlStorageValue::String(v),
        SqlValue::Blob(v) => SqlStorageValue::Blob(v),
    }
}

fn from_do(value: SqlStorageValue) -> SqlValue {
    match value {
        SqlStorageValue::Null => SqlValue::Null,
        SqlStorageValue::Boolean(v) => SqlValue::Integer(i64::from(v)),
        SqlStorageValue::Integer(v) => SqlValue::Integer(v),
        SqlStorageValue::Float(v) => SqlValue::Real(v),
        SqlStorageValue::String(v) => SqlValue::Text(v),
        SqlStorageValue::Blob(v) => SqlValue::Blob(v),
    }
}

/// Durable Object SQL reports failures as JS errors with SQLite's wording.
fn classify(err: worker::Error) -> StorageError {
    let message = err.to_string();
    if message.contains("constraint") {
        StorageError::ConstraintViolation(message)
    } else if message.contains("TOOBIG") || message.contains("too big") {
        StorageError::TooBig(message)
    } else if message.contains("syntax") || message.contains("no such") {
        StorageError::InvalidStatement(message)
    } else {
        StorageError::Io(message)
    }
}

/// A Durable Object's SQL and its raw `ctx.storage` (for
/// `transactionSync`), taken apart once when the object starts.
pub fn open(state: worker::State) -> (DoSql, wasm_bindgen::JsValue) {
    let raw = state._inner();
    let storage = raw
        .storage()
        .map(wasm_bindgen::JsValue::from)
        .unwrap_or(wasm_bindgen::JsValue::UNDEFINED);
    let state = worker::State::from(raw);
    (DoSql(state.storage().sql()), storage)
}
