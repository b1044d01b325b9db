//! The two ports the chunk saga runs over: the agent's object
//! ([`ChunkObject`]) and the KV store ([`BlobStore`]), with what every saga
//! shares about them (a key read until KV shows it), and the object port
//! over a store in this very process ([`LocalObject`], [`run_ready`]). An
//! owner's own port extends [`ChunkObject`] (kilo.db's:
//! `snapshot::ports::SnapshotObject`), so that its sagas reach the chunk
//! steps and its own through one object.

use super::{
    digest::{self, RunningHash},
    keys::chunk_key,
    lineage,
    operations::ChunkOperation,
};
use crate::{DomainError, Refusal, object_env::ObjectEnv, sql::SqlStore};
use std::{
    future::Future,
    sync::{Arc, OnceLock},
};

/// The smallest chunk the server's own split of a whole file (a whole-file
/// PUT) makes unless its store asks for larger ones
/// ([`BlobStore::min_split_chunk_size`]): fewer, larger chunks mean fewer
/// KV writes and fsyncs.
pub const SERVER_MIN_CHUNK_SIZE: u64 = 1024 * 1024;

/// The agent's object, as the chunk saga reaches it.
pub trait ChunkObject {
    /// Runs one chunk step atomically on the agent's object.
    fn run_chunk<R: Send + 'static>(
        &self,
        step: ChunkOperation<R>,
    ) -> impl Future<Output = Result<R, DomainError>>;
}

/// A KV store of immutable blobs.
pub trait BlobStore {
    /// Stores `value` under `key`.
    fn put(&self, key: &str, value: &[u8]) -> impl Future<Output = Result<(), DomainError>>;
    /// The value under `key`, or `None` when this store does not show it
    /// (yet: KV may be eventually consistent).
    fn get(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, DomainError>>;
    /// Removes `key`; removing a missing key is not an error.
    fn delete(&self, key: &str) -> impl Future<Output = Result<(), DomainError>>;
    /// One page of keys starting with `prefix`, and the cursor of the next.
    fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> impl Future<Output = Result<(Vec<String>, Option<String>), DomainError>>;
    /// How long to wait, in ms, before each retry of a key the metadata
    /// names but the store does not show yet; empty where reads are
    /// strongly consistent.
    fn propagation_delays_ms(&self) -> &[u64];
    /// Waits `ms` milliseconds.
    fn pause(&self, ms: u64) -> impl Future<Output = ()>;

    /// Stores every `(key, value)` of a batch upload; a store that makes
    /// many writes durable together (one folder fsync, not one per key)
    /// overrides it. Each key is whole once this returns.
    fn put_many(
        &self,
        values: Vec<(String, Vec<u8>)>,
    ) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            for (key, value) in &values {
                self.put(key, value).await?;
            }
            Ok(())
        }
    }

    /// Removes every key of `keys`; missing keys are fine.
    fn delete_all(&self, keys: &[String]) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            for key in keys {
                self.delete(key).await?;
            }
            Ok(())
        }
    }

    /// The smallest chunk a whole-file PUT is split into here (rounded up
    /// to a power of two). A store where each value costs a file, an fsync
    /// and a rename asks for fewer, larger chunks; a chunk is held in
    /// memory while it is written, so this bounds a PUT's memory too.
    fn min_split_chunk_size(&self) -> u64 {
        SERVER_MIN_CHUNK_SIZE
    }

    /// Takes a whole-file PUT's next chunk: feeds it to the file's running
    /// hash `whole` and stages it under its name (its sha256), NOT visible
    /// under its key until [`BlobStore::publish`]: the chunk's name must be
    /// claimed from the agent's object in between, so that no collection
    /// deletes the key after it is written. The default holds the bytes in
    /// the returned chunk. A runtime with cores to spare hashes and stages
    /// in the background, so that the body keeps arriving meanwhile, and may
    /// carry `whole` on elsewhere: only [`BlobStore::finish_whole`] ends it.
    fn stage_chunk(
        &self,
        key_prefix: &str,
        whole: &mut RunningHash,
        chunk: Vec<u8>,
    ) -> impl Future<Output = Result<StagedChunk, DomainError>> {
        let _ = key_prefix;
        async move {
            whole.update(&chunk);
            let name = self.sha256_hex(&chunk).await;
            Ok(StagedChunk::held(name, chunk))
        }
    }

    /// Waits until every chunk this handle staged is named (and, where the
    /// store stages them durably, written there).
    fn staged_names(&self) -> impl Future<Output = Result<(), DomainError>> {
        async { Ok(()) }
    }

    /// Makes staged chunks durable and visible under their keys
    /// (`chunk_key(key_prefix, name)`): the default writes the bytes each
    /// holds (none for a chunk [`StagedChunk::skip`]ped); a store that
    /// staged them elsewhere puts every chunk it staged in place.
    fn publish(
        &self,
        key_prefix: &str,
        chunks: Vec<StagedChunk>,
    ) -> impl Future<Output = Result<(), DomainError>> {
        async move {
            for chunk in chunks {
                if let (Some(name), Some(bytes)) = (chunk.name.get(), &chunk.bytes) {
                    self.put(&chunk_key(key_prefix, name), bytes).await?;
                }
            }
            Ok(())
        }
    }

    /// The most bytes a whole-file PUT stages before it claims, publishes
    /// and records them (the default holds them in memory).
    fn max_staged_bytes(&self) -> u64 {
        16 * 1024 * 1024
    }

    /// The lowercase hex sha256 of every byte fed to `whole`, by the caller
    /// or by [`BlobStore::put_chunk`] through this handle.
    fn finish_whole(
        &self,
        whole: RunningHash,
    ) -> impl Future<Output = Result<String, DomainError>> {
        async move { Ok(whole.finish_hex()) }
    }

    /// Lowercase hex sha256 of `bytes`. A runtime with a faster native
    /// digest than the portable one (the Workers runtime's WebCrypto)
    /// overrides it; the result must be the same.
    fn sha256_hex(&self, bytes: &[u8]) -> impl Future<Output = String> {
        let digest = digest::sha256_hex(bytes);
        async move { digest }
    }
}

/// A whole-file PUT's chunk as [`BlobStore::stage_chunk`] staged it.
#[derive(Debug, Clone)]
pub struct StagedChunk {
    /// Its name, known once [`BlobStore::staged_names`] returned.
    pub name: ChunkName,
    /// Its size.
    pub size: u64,
    /// Its bytes, where the store holds them here until they are published.
    bytes: Option<Vec<u8>>,
}

impl StagedChunk {
    /// A chunk whose bytes are held here until published.
    pub fn held(name: String, bytes: Vec<u8>) -> Self {
        Self {
            name: ChunkName::known(name),
            size: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
            bytes: Some(bytes),
        }
    }

    /// A chunk the store staged elsewhere.
    pub fn elsewhere(name: ChunkName, size: u64) -> Self {
        Self {
            name,
            size,
            bytes: None,
        }
    }

    /// Leaves the chunk unwritten (the store holds it already).
    pub fn skip(&mut self) {
        self.bytes = None;
    }
}

/// A chunk's name (the lowercase hex sha256 of its bytes) as
/// [`BlobStore::stage_chunk`] hands it over: known at once, or set by the
/// store where it hashes in the background, at the latest when
/// [`BlobStore::staged_names`] returns.
#[derive(Debug, Clone, Default)]
pub struct ChunkName(Arc<OnceLock<String>>);

impl ChunkName {
    /// A name known already.
    pub fn known(name: String) -> Self {
        let slot = Self::default();
        slot.set(name);
        slot
    }

    /// Gives the name; the first given stays.
    pub fn set(&self, name: String) {
        let _ = self.0.set(name);
    }

    /// The name, once given.
    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// Reads a key the metadata names, retrying while the store does not show
/// it yet. A chunk key the agent's folder lacks is looked for in its
/// ancestors' folders too (a fork's chunks taken from its source:
/// [`super::lineage`]).
pub async fn fetch_visible(blobs: &impl BlobStore, key: &str) -> Result<Vec<u8>, DomainError> {
    if let Some(bytes) = fetch_here_or_inherited(blobs, key).await? {
        return Ok(bytes);
    }
    for &delay in blobs.propagation_delays_ms() {
        blobs.pause(delay).await;
        if let Some(bytes) = fetch_here_or_inherited(blobs, key).await? {
            return Ok(bytes);
        }
    }
    Err(DomainError::Unavailable(Refusal::new(
        "snapshot_propagating",
        "the snapshot was stored but the KV store does not show it here yet; retry shortly",
    )))
}

/// `key`, else (for a chunk key) the same chunk in the folder of each
/// ancestor the agent's lineage key lists.
async fn fetch_here_or_inherited(
    blobs: &impl BlobStore,
    key: &str,
) -> Result<Option<Vec<u8>>, DomainError> {
    if let Some(bytes) = blobs.get(key).await? {
        return Ok(Some(bytes));
    }
    let Some((folder, name)) = lineage::split_chunk_key(key) else {
        return Ok(None);
    };
    let Some(listed) = blobs.get(&lineage::lineage_key(folder)).await? else {
        return Ok(None);
    };
    for inherited in lineage::ancestor_keys(&lineage::decode(&listed), name) {
        if let Some(bytes) = blobs.get(&inherited).await? {
            return Ok(Some(bytes));
        }
    }
    Ok(None)
}

/// The agent's object as a plain store in this very process (inside the
/// host's component, where the caller already holds the transaction).
pub struct LocalObject<'a, S> {
    /// The agent's SQL.
    pub store: &'a S,
    /// The clock.
    pub env: ObjectEnv,
}

impl<S: SqlStore> ChunkObject for LocalObject<'_, S> {
    async fn run_chunk<R: Send + 'static>(
        &self,
        step: ChunkOperation<R>,
    ) -> Result<R, DomainError> {
        step.run_with(|call| super::calls::execute(self.store, &call, &self.env))
    }
}

/// Runs a future that never waits (every port it uses answers at once,
/// like the component's imports) to completion.
pub fn run_ready<T>(future: impl Future<Output = T>) -> Result<T, DomainError> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => Ok(value),
        std::task::Poll::Pending => Err(DomainError::Storage(
            "a synchronous snapshot port returned a pending future".into(),
        )),
    }
}
