//! What a guest's store holds: the object's SQLite connection, answering the
//! `sql` import, and an empty WASI context (no files, no network, no env).

use super::bindings::stasis::objects::{sql, types};
use rusqlite::Connection;
use stasis_domain::sql::{SqlStore, SqlValue};
use stasis_sqlite::SqliteStore;
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
        let params = params.into_iter().map(from_wit).collect();
        match self.db.execute(&statement, params) {
            Ok(rows) => Ok(rows
                .into_iter()
                .map(|row| row.into_iter().map(to_wit).collect())
                .collect()),
            Err(err) => Err(sql_error(err)),
        }
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

fn to_wit(value: SqlValue) -> sql::Value {
    match value {
        SqlValue::Null => sql::Value::Null,
        SqlValue::Integer(v) => sql::Value::Integer(v),
        SqlValue::Real(v) => sql::Value::Real(v),
        SqlValue::Text(v) => sql::Value::Text(v),
        SqlValue::Blob(v) => sql::Value::Blob(v),
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
