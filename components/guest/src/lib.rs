//! What every stasis guest shares.
//!
//! The bindings of the imported interfaces (`types`, `sql`) are
//! generated here once; each component maps them in with `with:` so that
//! the conversions ([`conversions`]) work for all of them.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
pub mod bindings {
    wit_bindgen::generate!({
        world: "guest-imports",
        path: "../../wit",
    });
}

pub mod conversions;

use bindings::stasis::objects::{sql, types};
use conversions::{sql_value, storage_error, wit_error, wit_value};
use stasis_domain::{
    DomainError,
    sql::{Row, SqlStore, SqlValue, StorageError},
};

/// The object's database, through the host's `sql` import.
pub struct ImportedSql;

impl SqlStore for ImportedSql {
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError> {
        let params: Vec<sql::Value> = params.into_iter().map(wit_value).collect();
        match sql::execute(statement, &params) {
            Ok(rows) => Ok(rows
                .into_iter()
                .map(|row| row.into_iter().map(sql_value).collect())
                .collect()),
            Err(err) => Err(storage_error(err)),
        }
    }
}

/// Runs a domain function and maps its error onto the WIT variant.
pub fn run<T>(f: impl FnOnce() -> Result<T, DomainError>) -> Result<T, types::Error> {
    f().map_err(wit_error)
}
