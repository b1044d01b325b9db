//! The KV folder as the snapshot sagas' blob store (their other
//! port, the agent's object, is `stasis_api::AgentSnapshotObject`: snapshot
//! steps run in the state component like every agent call). The
//! domain's snapshot sagas run over them in the host process, so snapshot
//! bytes never enter a guest and are hashed natively (`sha2`, which uses
//! the CPU's SHA extensions where it has them).
//!
//! A whole-file PUT's chunks are hashed, written and fsynced to temporary
//! files in the background while the body still arrives ([`writing`]);
//! once their names are claimed, the batch is published: renamed into
//! place. A whole-file GET
//! reads them ahead ([`read_ahead`]).

use super::batch::StagedSync;
use super::folder::{BucketHandle, KvError, KvFolder};
use stasis_domain::{
    DomainError,
    chunk_store::{
        KV_BUCKET, RunningHash,
        ports::{BlobStore, StagedChunk},
    },
};
use std::sync::Arc;
use writing::{Unsettled, WholeHashing};

/// The smallest chunk of a whole-file PUT here: each chunk costs a file, an
/// fsync, a rename and a row, so 24 MiB go in 6 rather than 24 (the edge
/// keeps the domain's 1 MiB floor).
const SPLIT_CHUNK_SIZE: u64 = 4 * 1024 * 1024;

/// The snapshots bucket of the KV folder; each operation runs on one of
/// the KV threads ([`super::io_threads`]: files are written and fsynced). A whole-file PUT's
/// chunks wait, unsettled, in this handle (one per request), which also
/// carries the file's running hash.
#[derive(Clone)]
pub struct HostBlobs {
    kv: Arc<KvFolder>,
    bucket: BucketHandle,
    unsettled: Arc<Unsettled>,
    whole: Arc<WholeHashing>,
}

impl HostBlobs {
    /// The snapshots bucket of `kv`.
    pub fn open(kv: &Arc<KvFolder>) -> Result<Self, DomainError> {
        let bucket = kv.open(KV_BUCKET).map_err(kv_error)?;
        Ok(Self {
            kv: Arc::clone(kv),
            bucket,
            unsettled: Arc::default(),
            whole: Arc::default(),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&KvFolder, &BucketHandle) -> Result<T, KvError> + Send + 'static,
    ) -> Result<T, DomainError> {
        let (kv, bucket) = (Arc::clone(&self.kv), self.bucket.clone());
        super::io_threads::run(move || op(&kv, &bucket))
            .await
            .ok_or_else(|| DomainError::Storage("a KV task failed".into()))?
            .map_err(kv_error)
    }
}

/// Threads a batch upload's values are written on.
const PUT_MANY_THREADS: usize = 4;

/// A batch of at least this many values is made durable by one `syncfs`
/// rather than an fsync a file. `syncfs` flushes whatever else the file
/// system holds unwritten too, so a batch of a few chunks keeps its own
/// fsyncs and waits for nobody else's bytes.
const SYNCFS_FROM_VALUES: usize = 16;

/// Stages every value (on [`PUT_MANY_THREADS`] threads), makes them
/// durable, then settles them together; on a failure none is put in place.
fn put_many(
    kv: &KvFolder,
    bucket: &BucketHandle,
    values: &[(String, Vec<u8>)],
) -> Result<(), KvError> {
    let sync = if values.len() >= SYNCFS_FROM_VALUES {
        StagedSync::WithBatch
    } else {
        StagedSync::Alone
    };
    let per_thread = values.len().div_ceil(PUT_MANY_THREADS).max(1);
    let groups: Vec<(Vec<super::batch::Staged>, Option<KvError>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = values
            .chunks(per_thread)
            .map(|group| {
                scope.spawn(move || {
                    let mut staged = Vec::new();
                    for (key, value) in group {
                        match kv.stage(bucket, key, value, sync) {
                            Ok(value) => staged.push(value),
                            Err(err) => return (staged, Some(err)),
                        }
                    }
                    (staged, None)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker.join().unwrap_or_else(|_| {
                    let failed = KvError::Io {
                        path: bucket.dir.clone(),
                        source: std::io::Error::other("a staging thread panicked"),
                    };
                    (Vec::new(), Some(failed))
                })
            })
            .collect()
    });
    let mut all = Vec::with_capacity(values.len());
    let mut failure = None;
    for (staged, err) in groups {
        all.extend(staged);
        if failure.is_none() {
            failure = err;
        }
    }
    if failure.is_none() && sync == StagedSync::WithBatch {
        failure = kv.sync_staged(bucket).err();
    }
    if let Some(err) = failure {
        all.into_iter().for_each(super::batch::Staged::discard);
        return Err(err);
    }
    kv.settle(all)
}

fn kv_error(err: KvError) -> DomainError {
    DomainError::Storage(format!("KV folder: {err}"))
}

impl BlobStore for HostBlobs {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        let (key, value) = (key.to_owned(), value.to_vec());
        self.blocking(move |kv, bucket| kv.set(bucket, &key, &value))
            .await
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        let key = key.to_owned();
        self.blocking(move |kv, bucket| kv.get(bucket, &key)).await
    }

    async fn stage_chunk(
        &self,
        key_prefix: &str,
        whole: &mut RunningHash,
        chunk: Vec<u8>,
    ) -> Result<StagedChunk, DomainError> {
        let size = u64::try_from(chunk.len()).unwrap_or(u64::MAX);
        let name = self.write_chunk(key_prefix, whole, chunk).await?;
        Ok(StagedChunk::elsewhere(name, size))
    }

    async fn staged_names(&self) -> Result<(), DomainError> {
        self.wait_staged().await
    }

    /// Every chunk this handle staged goes in place, a chunk the store
    /// held already too (the same bytes under the same name).
    async fn publish(
        &self,
        _key_prefix: &str,
        _chunks: Vec<StagedChunk>,
    ) -> Result<(), DomainError> {
        self.settle_batch().await
    }

    /// Staged chunks are files, not memory.
    fn max_staged_bytes(&self) -> u64 {
        64 * 1024 * 1024
    }

    async fn finish_whole(&self, whole: RunningHash) -> Result<String, DomainError> {
        self.finish_whole_hash(whole).await
    }

    fn min_split_chunk_size(&self) -> u64 {
        SPLIT_CHUNK_SIZE
    }

    /// A batch upload's chunks: each written to a temporary file (on a few
    /// threads), all made durable (by one `syncfs` when they are many), then
    /// all renamed into place and their folder fsynced once.
    async fn put_many(&self, values: Vec<(String, Vec<u8>)>) -> Result<(), DomainError> {
        self.blocking(move |kv, bucket| put_many(kv, bucket, &values))
            .await
    }

    async fn delete_all(&self, keys: &[String]) -> Result<(), DomainError> {
        let keys = keys.to_vec();
        self.blocking(move |kv, bucket| kv.delete_many(bucket, &keys))
            .await
    }

    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        let key = key.to_owned();
        self.blocking(move |kv, bucket| kv.delete(bucket, &key))
            .await
    }

    async fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        let prefix = prefix.to_owned();
        self.blocking(move |kv, bucket| kv.list(bucket, &prefix, cursor.as_deref()))
            .await
    }

    /// The folder is strongly consistent: a key the metadata names is there.
    fn propagation_delays_ms(&self) -> &[u64] {
        &[]
    }

    async fn pause(&self, ms: u64) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

mod read_ahead;
mod writing;

#[cfg(test)]
mod tests;
