//! The host's state in one wasmtime store (one object's call group): the
//! object's SQLite connection, answering the guests' `sql` import, and an
//! empty WASI context (no files, no network, no env).

use super::{
    bindings::imports::stasis::objects::{sql, types},
    conversions::{sql_error, sql_value, wit_value},
};
use rusqlite::Connection;
use stasis_domain::sql::SqlValue;
use stasis_sqlite::SqliteStore;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The data of one wasmtime store: one object, for one group of calls.
pub struct StoreState {
    /// The object's database; the executor owns the transaction around it.
    pub db: SqliteStore,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl StoreState {
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

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for StoreState {}

impl sql::Host for StoreState {
    fn execute(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> Result<Vec<sql::Row>, sql::SqlError> {
        let params: Vec<SqlValue> = params.into_iter().map(sql_value).collect();
        self.db
            .execute_as(&statement, &params, wit_value)
            .map_err(sql_error)
    }
}
