//! The KV folder as the snapshot sagas' blob store (their other
//! port, the agent's object, is `stasis_api::AgentSnapshotObject`: snapshot
//! steps run in the state component like every agent call). The
//! domain's snapshot sagas run over them in the host process, so snapshot
//! bytes never enter a guest and are hashed natively (`sha2`, which uses
//! the CPU's SHA extensions where it has them), a chunk's own hash on a
//! second thread while the file's running hash takes it on the first.
//!
//! A whole-file PUT's chunks are written and fsynced in the background
//! while the body still arrives (a few at a time, which bounds the memory
//! they hold); the batch's settle waits for them and renames them into
//! place. A whole-file GET reads them ahead ([`read_ahead`]).

use super::{
    batch::Staged,
    folder::{BucketHandle, KvError, KvFolder},
};
use stasis_domain::{
    DomainError,
    snapshot::{KV_BUCKET, RunningHash, saga::BlobStore, sha256_hex},
};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, PoisonError},
};
use tokio::task::JoinHandle;

/// The smallest chunk of a whole-file PUT here: each chunk costs a file, an
/// fsync, a rename and a row, so 24 MiB go in 6 rather than 24 (the edge
/// keeps the domain's 1 MiB floor).
const SPLIT_CHUNK_SIZE: u64 = 4 * 1024 * 1024;

/// Chunks a PUT writes in the background at once, at most: with the chunk
/// being filled, they bound what the PUT holds in memory.
const WRITES_IN_FLIGHT: usize = 2;

/// The snapshots bucket of the KV folder; each operation runs on a
/// blocking thread (files are written and fsynced). Values written in a
/// batch wait, unsettled, in this handle (one per request).
#[derive(Clone)]
pub struct HostBlobs {
    kv: Arc<KvFolder>,
    bucket: BucketHandle,
    unsettled: Arc<Unsettled>,
}

/// Batched values not yet settled: those still being written, oldest
/// first, and those written. Dropped unsettled, their temporary files go.
#[derive(Default)]
struct Unsettled(Mutex<Batch>);

type Staging = JoinHandle<Result<Staged, KvError>>;

#[derive(Default)]
struct Batch {
    writing: VecDeque<Staging>,
    written: Vec<Staged>,
}

impl Unsettled {
    fn lock(&self) -> std::sync::MutexGuard<'_, Batch> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) -> Batch {
        std::mem::take(&mut *self.lock())
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        let Batch { writing, written } = self.take();
        written.into_iter().for_each(Staged::discard);
        // Writes still running are waited for elsewhere; without a runtime
        // their files stay until the next start removes them.
        if !writing.is_empty()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                for staging in writing {
                    if let Ok(Ok(staged)) = staging.await {
                        staged.discard();
                    }
                }
            });
        }
    }
}

/// The value a background write staged.
async fn staged(staging: Staging) -> Result<Staged, DomainError> {
    staging
        .await
        .map_err(|err| DomainError::Storage(format!("a KV task failed: {err}")))?
        .map_err(kv_error)
}

impl HostBlobs {
    /// The snapshots bucket of `kv`.
    pub fn open(kv: &Arc<KvFolder>) -> Result<Self, DomainError> {
        let bucket = kv.open(KV_BUCKET).map_err(kv_error)?;
        Ok(Self {
            kv: Arc::clone(kv),
            bucket,
            unsettled: Arc::default(),
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&KvFolder, &BucketHandle) -> Result<T, KvError> + Send + 'static,
    ) -> Result<T, DomainError> {
        let (kv, bucket) = (Arc::clone(&self.kv), self.bucket.clone());
        tokio::task::spawn_blocking(move || op(&kv, &bucket))
            .await
            .map_err(|err| DomainError::Storage(format!("a KV task failed: {err}")))?
            .map_err(kv_error)
    }
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

    /// Starts writing (and fsyncing) the value in the background; waits
    /// only for the oldest write when [`WRITES_IN_FLIGHT`] are running.
    async fn put_batched(&self, key: &str, value: Vec<u8>) -> Result<(), DomainError> {
        let key = key.to_owned();
        let (kv, bucket) = (Arc::clone(&self.kv), self.bucket.clone());
        let staging = tokio::task::spawn_blocking(move || kv.stage(&bucket, &key, &value));
        let oldest = {
            let mut batch = self.unsettled.lock();
            batch.writing.push_back(staging);
            (batch.writing.len() > WRITES_IN_FLIGHT)
                .then(|| batch.writing.pop_front())
                .flatten()
        };
        if let Some(oldest) = oldest {
            let staged = staged(oldest).await?;
            self.unsettled.lock().written.push(staged);
        }
        Ok(())
    }

    async fn settle(&self) -> Result<(), DomainError> {
        let Batch {
            writing,
            mut written,
        } = self.unsettled.take();
        let mut failure = None;
        for staging in writing {
            match staged(staging).await {
                Ok(value) => written.push(value),
                Err(err) => failure = Some(err),
            }
        }
        if let Some(err) = failure {
            written.into_iter().for_each(Staged::discard);
            return Err(err);
        }
        self.blocking(move |kv, _| kv.settle(written)).await
    }

    fn min_split_chunk_size(&self) -> u64 {
        SPLIT_CHUNK_SIZE
    }

    /// The chunk's hash on a scoped thread while this one feeds the file's.
    async fn hash_chunk(&self, whole: &mut RunningHash, chunk: &[u8]) -> String {
        std::thread::scope(|scope| {
            let named = scope.spawn(|| sha256_hex(chunk));
            whole.update(chunk);
            // A hashing thread that could not finish: hash here instead.
            named.join().unwrap_or_else(|_| sha256_hex(chunk))
        })
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
#[cfg(test)]
mod tests;
