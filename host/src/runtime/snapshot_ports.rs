//! The host's KV folder as the snapshot sagas' blob store (their other
//! port, the agent's object, is `stasis_api::AgentSnapshotObject`: snapshot
//! steps run in the state component like every agent call). The
//! domain's snapshot sagas run over them in the host process, so snapshot
//! bytes never enter a guest and are hashed natively (`sha2`, which uses
//! the CPU's SHA extensions where it has them).

use super::{
    kv_batch::Staged,
    kv_folder::{BucketHandle, KvError, KvFolder},
};
use stasis_domain::{
    DomainError,
    snapshot::{KV_BUCKET, saga::BlobStore},
};
use std::sync::{Arc, Mutex, PoisonError};

/// The snapshots bucket of the KV folder; each operation runs on a
/// blocking thread (files are written and fsynced). Values written in a
/// batch wait, unsettled, in this handle (one per request).
#[derive(Clone)]
pub struct HostBlobs {
    kv: Arc<KvFolder>,
    bucket: BucketHandle,
    unsettled: Arc<Unsettled>,
}

/// Batched values not yet settled; dropped unsettled, their temporary
/// files go.
#[derive(Default)]
struct Unsettled(Mutex<Vec<Staged>>);

impl Unsettled {
    fn take(&self) -> Vec<Staged> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Unsettled {
    fn drop(&mut self) {
        self.take().into_iter().for_each(Staged::discard);
    }
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

    async fn put_batched(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        let (key, value) = (key.to_owned(), value.to_vec());
        let staged = self
            .blocking(move |kv, bucket| kv.stage(bucket, &key, &value))
            .await?;
        self.unsettled
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(staged);
        Ok(())
    }

    async fn settle(&self) -> Result<(), DomainError> {
        let staged = self.unsettled.take();
        self.blocking(move |kv, _| kv.settle(staged)).await
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
