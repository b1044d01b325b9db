//! What every stasis guest shares.
//!
//! The bindings of the imported interfaces (`types`, `sql`, `kv-store`) are
//! generated here once; each component maps them in with `with:` so that
//! the conversions below work for all of them.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
pub mod bindings {
    wit_bindgen::generate!({
        world: "guest-imports",
        path: "../../wit",
    });
}

use bindings::stasis::objects::{sql, types};
use stasis_domain::{
    DomainError, Refusal,
    sql::{Row, SqlStore, SqlValue, StorageError},
};

/// The object's database, through the host's `sql` import.
pub struct ImportedSql;

impl SqlStore for ImportedSql {
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError> {
        let params: Vec<sql::Value> = params.into_iter().map(to_wit_value).collect();
        match sql::execute(statement, &params) {
            Ok(rows) => Ok(rows
                .into_iter()
                .map(|row| row.into_iter().map(from_wit_value).collect())
                .collect()),
            Err(err) => Err(from_wit_sql_error(err)),
        }
    }
}

fn to_wit_value(value: SqlValue) -> sql::Value {
    match value {
        SqlValue::Null => sql::Value::Null,
        SqlValue::Integer(v) => sql::Value::Integer(v),
        SqlValue::Real(v) => sql::Value::Real(v),
        SqlValue::Text(v) => sql::Value::Text(v),
        SqlValue::Blob(v) => sql::Value::Blob(v),
    }
}

fn from_wit_value(value: sql::Value) -> SqlValue {
    match value {
        sql::Value::Null => SqlValue::Null,
        sql::Value::Integer(v) => SqlValue::Integer(v),
        sql::Value::Real(v) => SqlValue::Real(v),
        sql::Value::Text(v) => SqlValue::Text(v),
        sql::Value::Blob(v) => SqlValue::Blob(v),
    }
}

fn from_wit_sql_error(err: sql::SqlError) -> StorageError {
    match err {
        sql::SqlError::ConstraintViolation(m) => StorageError::ConstraintViolation(m),
        sql::SqlError::TooBig(m) => StorageError::TooBig(m),
        sql::SqlError::InvalidStatement(m) => StorageError::InvalidStatement(m),
        sql::SqlError::Io(m) => StorageError::Io(m),
    }
}

/// A domain error as the WIT `error` variant.
pub fn to_wit_error(err: DomainError) -> types::Error {
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
        DomainError::Storage(m) => types::Error::Storage(m),
    }
}

/// Runs a domain function and maps its error onto the WIT variant.
pub fn run<T>(f: impl FnOnce() -> Result<T, DomainError>) -> Result<T, types::Error> {
    f().map_err(to_wit_error)
}
