//! A whole-file PUT's chunks on their way into the folder, overlapping the
//! body's arrival: the file's running hash is taken on a blocking thread of
//! its own, fed the chunks in order; each chunk is named (hashed) and
//! written and fsynced to a temporary file on another, a few at a time; a
//! batch waits for them (so that their names can be claimed), then each is
//! renamed into place under its name. The caller only waits when the hash or the writes fall behind,
//! which bounds the chunks held in memory.

use super::{
    super::{
        batch::{Staged, StagedSync},
        folder::KvError,
    },
    HostBlobs, kv_error,
};
use bytes::Bytes;
use stasis_domain::{
    DomainError,
    chunk_store::{RunningHash, chunk_key, ports::ChunkName, sha256_hex},
};
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};
use tokio::{sync::mpsc, task::JoinHandle};

/// Chunks a PUT names and writes in the background at once, at most: with
/// the chunk being filled (and those queued for the file's hash, which
/// they share), they bound what the PUT holds in memory.
pub(super) const WRITES_IN_FLIGHT: usize = 3;

/// Chunks waiting for the file's running hash, besides the one it takes.
const HASH_QUEUE: usize = 1;

/// Batched values not yet settled: those still being written, oldest
/// first, and those written. Dropped unsettled, their temporary files go.
#[derive(Default)]
pub(super) struct Unsettled(Mutex<Batch>);

type Staging = JoinHandle<Result<Staged, KvError>>;

#[derive(Default)]
struct Batch {
    writing: VecDeque<Staging>,
    written: Vec<Staged>,
}

impl Unsettled {
    fn lock(&self) -> MutexGuard<'_, Batch> {
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

/// The running hash of the file whose chunks this handle writes, once the
/// first chunk started it: a thread takes each chunk sent, in order.
#[derive(Default)]
pub(super) struct WholeHashing(Mutex<Option<Hashing>>);

struct Hashing {
    chunks: mpsc::Sender<Bytes>,
    hashed: JoinHandle<RunningHash>,
}

impl WholeHashing {
    fn lock(&self) -> MutexGuard<'_, Option<Hashing>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `chunk` to the hashing thread, started with what `whole` took
    /// so far (it carries the hash on from there); waits only while
    /// [`HASH_QUEUE`] chunks wait for it. The thread ends when the handle
    /// goes.
    async fn feed(&self, whole: &mut RunningHash, chunk: Bytes) -> Result<(), DomainError> {
        let chunks = {
            let mut hashing = self.lock();
            let hashing = hashing.get_or_insert_with(|| {
                let (chunks, mut queue) = mpsc::channel::<Bytes>(HASH_QUEUE);
                let mut whole = std::mem::take(whole);
                let hashed = tokio::task::spawn_blocking(move || {
                    while let Some(chunk) = queue.blocking_recv() {
                        whole.update(&chunk);
                    }
                    whole
                });
                Hashing { chunks, hashed }
            });
            hashing.chunks.clone()
        };
        chunks
            .send(chunk)
            .await
            .map_err(|_| DomainError::Storage("the file's hashing thread stopped".into()))
    }

    /// The sha256 of every chunk fed since the last finish (after what
    /// `whole` took before them), or of `whole` where none was.
    async fn finish(&self, whole: RunningHash) -> Result<String, DomainError> {
        let Some(Hashing { chunks, hashed }) = self.lock().take() else {
            return Ok(whole.finish_hex());
        };
        drop(chunks);
        let whole = hashed.await.map_err(|err| {
            DomainError::Storage(format!("the file's hashing thread failed: {err}"))
        })?;
        Ok(whole.finish_hex())
    }
}

impl HostBlobs {
    /// Feeds `chunk` to the file's hash on its thread and names and stages
    /// it on a blocking one; waits only for the oldest write when
    /// [`WRITES_IN_FLIGHT`] are running (or for the hash, when behind).
    pub(super) async fn write_chunk(
        &self,
        key_prefix: &str,
        whole: &mut RunningHash,
        chunk: Vec<u8>,
    ) -> Result<ChunkName, DomainError> {
        let chunk = Bytes::from(chunk);
        self.whole.feed(whole, chunk.clone()).await?;
        let name = ChunkName::default();
        let (kv, bucket) = (Arc::clone(&self.kv), self.bucket.clone());
        let (key_prefix, named) = (key_prefix.to_owned(), name.clone());
        self.queue(tokio::task::spawn_blocking(move || {
            let hex = sha256_hex(&chunk);
            let key = chunk_key(&key_prefix, &hex);
            named.set(hex);
            kv.stage(&bucket, &key, &chunk, StagedSync::Alone)
        }))
        .await?;
        Ok(name)
    }

    async fn queue(&self, staging: Staging) -> Result<(), DomainError> {
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

    /// Waits for the batch's writes: every staged chunk is named and in
    /// its temporary file. On a failure the batch is discarded.
    pub(super) async fn wait_staged(&self) -> Result<(), DomainError> {
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
        self.unsettled.lock().written = written;
        Ok(())
    }

    /// Waits for the batch's writes, then puts every value in place; on a
    /// failure none is.
    pub(super) async fn settle_batch(&self) -> Result<(), DomainError> {
        self.wait_staged().await?;
        let written = std::mem::take(&mut self.unsettled.lock().written);
        self.blocking(move |kv, _| kv.settle(written)).await
    }

    /// The file's sha256 (see [`WholeHashing::finish`]).
    pub(super) async fn finish_whole_hash(
        &self,
        whole: RunningHash,
    ) -> Result<String, DomainError> {
        self.whole.finish(whole).await
    }
}
