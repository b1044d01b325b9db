//! What a guest's store holds: the object's SQLite connection, answering the
//! `sql` import, the KV folder, answering `kv-store`, and an empty WASI
//! context (no files, no network, no env).

use super::{
    bindings::imports::stasis::objects::{kv_store, sql, types},
    conversions::{kv_error, sql_error, sql_value, wit_value},
    kv_folder::{BucketHandle, KvFolder},
};
use rusqlite::Connection;
use stasis_domain::sql::SqlValue;
use stasis_sqlite::SqliteStore;
use std::sync::Arc;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The data of one wasmtime store: one object, for one group of calls.
pub struct GuestState {
    /// The object's database; the executor owns the transaction around it.
    pub db: SqliteStore,
    kv: Arc<KvFolder>,
    /// KV keys the guest deleted, removed only once the group commits.
    deferred_deletes: Vec<(BucketHandle, String)>,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl GuestState {
    /// State over an open database and the host's KV folder.
    pub fn new(db: SqliteStore, kv: Arc<KvFolder>) -> Self {
        Self {
            db,
            kv,
            deferred_deletes: Vec::new(),
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }

    /// The KV deletes of this group, for the executor to apply after its
    /// commit (or drop after a rollback: then a sweep finds them later).
    pub fn take_deferred_deletes(&mut self) -> Vec<(BucketHandle, String)> {
        std::mem::take(&mut self.deferred_deletes)
    }

    /// How many deletes are deferred so far (a call's starting mark).
    pub fn deferred_mark(&self) -> usize {
        self.deferred_deletes.len()
    }

    /// Forgets the deletes of a call rolled back since `mark`: its writes
    /// are undone, so the keys it meant to drop may still be named.
    pub fn forget_deletes_since(&mut self, mark: usize) {
        self.deferred_deletes.truncate(mark);
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
        let params: Vec<SqlValue> = params.into_iter().map(sql_value).collect();
        self.db
            .execute_as(&statement, &params, wit_value)
            .map_err(sql_error)
    }
}

impl kv_store::Host for GuestState {
    fn open(&mut self, identifier: String) -> Result<Resource<BucketHandle>, kv_store::Error> {
        let bucket = self.kv.open(&identifier).map_err(kv_error)?;
        self.table
            .push(bucket)
            .map_err(|err| kv_store::Error::Other(err.to_string()))
    }
}

impl GuestState {
    /// Stores `value` under `key` in the bucket behind `handle`.
    pub fn kv_set(
        &self,
        handle: &Resource<BucketHandle>,
        key: &str,
        value: &[u8],
    ) -> Result<(), kv_store::Error> {
        let bucket = self.bucket(handle)?;
        self.kv.set(&bucket, key, value).map_err(kv_error)
    }

    fn bucket(&self, handle: &Resource<BucketHandle>) -> Result<BucketHandle, kv_store::Error> {
        self.table
            .get(handle)
            .cloned()
            .map_err(|err| kv_store::Error::Other(err.to_string()))
    }
}

impl kv_store::HostBucket for GuestState {
    fn get(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> Result<Option<Vec<u8>>, kv_store::Error> {
        let bucket = self.bucket(&bucket)?;
        self.kv.get(&bucket, &key).map_err(kv_error)
    }

    /// Unused while [`super::kv_set`] shadows it in the linker; kept so the
    /// generated trait is whole.
    fn set(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
        value: Vec<u8>,
    ) -> Result<(), kv_store::Error> {
        self.kv_set(&bucket, &key, &value)
    }

    /// Deferred until the group's transaction commits: a delete is the last
    /// step of a metadata switch that is not durable yet.
    fn delete(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> Result<(), kv_store::Error> {
        let bucket = self.bucket(&bucket)?;
        self.kv.check_key(&key).map_err(kv_error)?;
        self.deferred_deletes.push((bucket, key));
        Ok(())
    }
    fn exists(
        &mut self,
        bucket: Resource<BucketHandle>,
        key: String,
    ) -> Result<bool, kv_store::Error> {
        let bucket = self.bucket(&bucket)?;
        self.kv.exists(&bucket, &key).map_err(kv_error)
    }

    fn list_keys(
        &mut self,
        bucket: Resource<BucketHandle>,
        prefix: String,
        cursor: Option<String>,
    ) -> Result<kv_store::KeyResponse, kv_store::Error> {
        let bucket = self.bucket(&bucket)?;
        let (keys, cursor) = self
            .kv
            .list(&bucket, &prefix, cursor.as_deref())
            .map_err(kv_error)?;
        Ok(kv_store::KeyResponse { keys, cursor })
    }

    fn drop(&mut self, bucket: Resource<BucketHandle>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}
