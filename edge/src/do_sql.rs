//! The domain's SQL port over Durable Object SQL, and its transactions:
//! Durable Object SQL forbids BEGIN and SAVEPOINT, so a call is made
//! atomic by running it inside `ctx.storage.transactionSync`.

use js_sys::{Function, Reflect};
use stasis_domain::{
    DomainError,
    sql::{Row, SqlStore, SqlValue, StorageError},
};
use std::{cell::RefCell, rc::Rc};
use wasm_bindgen::{JsCast, JsValue, closure::Closure};
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
pub fn open(state: worker::State) -> (DoSql, JsValue) {
    let raw = state._inner();
    let storage = raw
        .storage()
        .map(JsValue::from)
        .unwrap_or(JsValue::UNDEFINED);
    let state = worker::State::from(raw);
    (DoSql(state.storage().sql()), storage)
}

/// Runs `f` inside `ctx.storage.transactionSync`, which rolls back every
/// write when its callback throws; an `Err` from `f` is turned into a throw.
pub fn atomically<T: 'static>(
    storage: &JsValue,
    f: impl FnOnce() -> std::result::Result<T, DomainError> + 'static,
) -> std::result::Result<T, DomainError> {
    let outcome: Rc<RefCell<Option<std::result::Result<T, DomainError>>>> = Rc::default();
    let slot = Rc::clone(&outcome);
    let mut f = Some(f);
    let body = Closure::<dyn FnMut() -> std::result::Result<JsValue, JsValue>>::new(move || {
        let Some(f) = f.take() else {
            return Ok(JsValue::UNDEFINED);
        };
        let result = f();
        let failed = result.is_err();
        *slot.borrow_mut() = Some(result);
        if failed {
            Err(JsValue::from_str("stasis: refused, rolling back"))
        } else {
            Ok(JsValue::UNDEFINED)
        }
    });
    let transaction_sync = Reflect::get(storage, &JsValue::from_str("transactionSync"))
        .ok()
        .and_then(|f| f.dyn_into::<Function>().ok());
    let Some(transaction_sync) = transaction_sync else {
        return Err(DomainError::Storage(
            "ctx.storage.transactionSync is missing".into(),
        ));
    };
    let thrown = transaction_sync.call1(storage, body.as_ref()).err();
    let result = outcome.borrow_mut().take();
    match (result, thrown) {
        (Some(result), _) => result,
        (None, Some(err)) => Err(DomainError::Storage(format!("transaction failed: {err:?}"))),
        (None, None) => Err(DomainError::Storage("the transaction did not run".into())),
    }
}
