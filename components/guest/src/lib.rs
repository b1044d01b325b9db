//! What every stasis guest shares.
//!
//! The bindings of the imported interfaces (`types`, `sql`, `kv-store`) are
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

use bindings::stasis::objects::{kv_store, sql, types};
use conversions::{sql_value, storage_error, wit_error, wit_value};
use stasis_domain::{
    DomainError,
    snapshot::saga::BlobStore,
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

/// A bucket of the host's KV store, as the domain's blob port. Every call
/// answers at once, so the saga runs through [`saga::run_ready`].
///
/// [`saga::run_ready`]: stasis_domain::snapshot::saga::run_ready
pub struct ImportedKv {
    bucket: kv_store::Bucket,
}

impl ImportedKv {
    /// Opens the bucket named `name`.
    pub fn open(name: &str) -> Result<Self, DomainError> {
        kv_store::open(name)
            .map(|bucket| Self { bucket })
            .map_err(kv_error)
    }
}

impl BlobStore for ImportedKv {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        self.bucket.set(key, value).map_err(kv_error)
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        self.bucket.get(key).map_err(kv_error)
    }

    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        self.bucket.delete(key).map_err(kv_error)
    }

    async fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        self.bucket
            .list_keys(prefix, cursor.as_deref())
            .map(|page| (page.keys, page.cursor))
            .map_err(kv_error)
    }

    /// The host's KV folder is strongly consistent: a missing key is
    /// missing.
    fn propagation_delays_ms(&self) -> &[u64] {
        &[]
    }

    async fn pause(&self, _ms: u64) {}
}

fn kv_error(err: kv_store::Error) -> DomainError {
    let detail = match err {
        kv_store::Error::NoSuchStore => "no such KV store".to_owned(),
        kv_store::Error::AccessDenied => "KV access denied".to_owned(),
        kv_store::Error::Other(detail) => detail,
    };
    DomainError::Storage(format!("KV: {detail}"))
}
