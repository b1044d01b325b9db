//! What a guest's store holds: the object's SQLite connection, answering the
//! `sql` import, and an empty WASI context (no files, no network, no env).

use super::bindings::stasis::objects::{sql, types};
use rusqlite::Connection;
use stasis_domain::sql::SqlValue;
use stasis_sqlite::{SqliteStore, ValueRef};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The data of one wasmtime store: one object, for one group of calls.
pub struct GuestState {
    /// The object's database; the executor owns the transaction around it.
    pub db: SqliteStore,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl GuestState {
    /// State over an open database.
    pub fn new(db: SqliteStore) -> Self {
        Self {
            db,
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }

    /// The connection, for the executor's BEGIN/SAVEPOINT/COMMIT.
    pub fn connection(&self) -> &Connection {
        self.db.connection()
    }
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for GuestState {}

impl sql::Host for GuestState {
    fn execute(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> Result<Vec<sql::Row>, sql::SqlError> {
        let params: Vec<SqlValue> = params.into_iter().map(from_wit).collect();
        self.db
            .execute_as(&statement, &params, to_wit)
            .map_err(sql_error)
    }
}

fn from_wit(value: sql::Value) -> SqlValue {
    match value {
        sql::Value::Null => SqlValue::Null,
        sql::Value::Integer(v) => SqlValue::Integer(v),
        sql::Value::Real(v) => SqlValue::Real(v),
        sql::Value::Text(v) => SqlValue::Text(v),
        sql::Value::Blob(v) => SqlValue::Blob(v),
    }
}

fn to_wit(value: ValueRef<'_>) -> sql::Value {
    match value {
        ValueRef::Null => sql::Value::Null,
        ValueRef::Integer(v) => sql::Value::Integer(v),
        ValueRef::Real(v) => sql::Value::Real(v),
        ValueRef::Text(v) => sql::Value::Text(stasis_sqlite::text_from(v)),
        ValueRef::Blob(v) => sql::Value::Blob(v.to_vec()),
    }
}

fn sql_error(err: stasis_domain::sql::StorageError) -> sql::SqlError {
    use stasis_domain::sql::StorageError as E;
    match err {
        E::ConstraintViolation(m) => sql::SqlError::ConstraintViolation(m),
        E::TooBig(m) => sql::SqlError::TooBig(m),
        E::InvalidStatement(m) => sql::SqlError::InvalidStatement(m),
        E::Io(m) | E::Shape(m) => sql::SqlError::Io(m),
    }
}
