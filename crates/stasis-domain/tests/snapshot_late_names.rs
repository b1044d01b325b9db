//! A whole-file PUT over a store that names its chunks only once they are
//! staged (as the host does, hashing in the background): the manifest
//! still names each chunk by its content, in order; a store that stages a
//! chunk without naming it fails the PUT, which records nothing.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use stasis_domain::sql::SqlStore as _;
use stasis_domain::{
    DomainError,
    chunk_store::{
        RunningHash, chunk_key,
        ports::{BlobStore, ChunkName, StagedChunk, run_ready},
        sha256_hex,
    },
    snapshot::{self, chunk_saga, whole::WholeWriter},
};
use stasis_sqlite::SqliteStore;
use std::cell::RefCell;
use support::{MemoryKv, agent_object as object, agent_store, noise};

const PREFIX: &str = "t/r/a/";
const CHUNK: usize = 1 << 20;

/// KV in memory whose chunk names are given once staged (or, `forgetful`,
/// never), and whose staged chunks wait here until published.
#[derive(Default)]
struct LateNames {
    kv: MemoryKv,
    unnamed: RefCell<Vec<(ChunkName, String)>>,
    staged: RefCell<Vec<(String, Vec<u8>)>>,
    forgetful: bool,
}

impl BlobStore for LateNames {
    async fn put(&self, key: &str, value: &[u8]) -> Result<(), DomainError> {
        self.kv.put(key, value).await
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        self.kv.get(key).await
    }
    async fn delete(&self, key: &str) -> Result<(), DomainError> {
        self.kv.delete(key).await
    }
    async fn list(
        &self,
        prefix: &str,
        cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        self.kv.list(prefix, cursor).await
    }
    fn propagation_delays_ms(&self) -> &[u64] {
        &[]
    }
    async fn pause(&self, _ms: u64) {}

    async fn stage_chunk(
        &self,
        key_prefix: &str,
        whole: &mut RunningHash,
        chunk: Vec<u8>,
    ) -> Result<StagedChunk, DomainError> {
        whole.update(&chunk);
        let name = sha256_hex(&chunk);
        let size = chunk.len() as u64;
        self.staged
            .borrow_mut()
            .push((chunk_key(key_prefix, &name), chunk));
        let later = ChunkName::default();
        self.unnamed.borrow_mut().push((later.clone(), name));
        Ok(StagedChunk::elsewhere(later, size))
    }

    async fn staged_names(&self) -> Result<(), DomainError> {
        for (slot, name) in self.unnamed.borrow_mut().drain(..) {
            if !self.forgetful {
                slot.set(name);
            }
        }
        Ok(())
    }

    async fn publish(
        &self,
        _key_prefix: &str,
        _chunks: Vec<StagedChunk>,
    ) -> Result<(), DomainError> {
        let staged = std::mem::take(&mut *self.staged.borrow_mut());
        for (key, bytes) in staged {
            self.kv.put(&key, &bytes).await?;
        }
        Ok(())
    }
}

fn put_whole(store: &SqliteStore, blobs: &LateNames, body: &[u8]) -> Result<(), DomainError> {
    let object = object(store);
    let mut request = support::put_request(PREFIX, snapshot::DEFAULT_SNAPSHOT_LIMIT, 0);
    request.expected_sha256 = Some(sha256_hex(body));
    let size = u64::try_from(body.len()).expect("small");
    let mut writer = WholeWriter::new(request, Some(size), CHUNK as u64);
    for piece in body.chunks(300_000) {
        run_ready(writer.write(&object, blobs, piece)).expect("ready")?;
    }
    run_ready(writer.finish(&object, blobs)).expect("ready")?;
    Ok(())
}

#[test]
fn chunks_named_once_staged_are_named_by_their_content_in_order() {
    let (store, blobs) = (agent_store(), LateNames::default());
    let body = noise(3 * CHUNK + 5_000, 4);
    put_whole(&store, &blobs, &body).expect("stored");
    let plan = run_ready(chunk_saga::plan(&object(&store), false))
        .expect("ready")
        .expect("read")
        .expect("a snapshot");
    let expected: Vec<String> = body.chunks(CHUNK).map(sha256_hex).collect();
    assert_eq!(plan.chunks, expected);
    assert_eq!(plan.meta.sha256, sha256_hex(&body));
}

#[test]
fn a_chunk_staged_unnamed_fails_the_put_and_records_nothing() {
    let store = agent_store();
    let blobs = LateNames {
        forgetful: true,
        ..LateNames::default()
    };
    let err = put_whole(&store, &blobs, &noise(2 * CHUNK + 1, 5)).expect_err("refused");
    assert!(matches!(err, DomainError::Storage(_)), "{err}");
    let plan = run_ready(chunk_saga::plan(&object(&store), false)).expect("ready");
    assert!(plan.expect("read").is_none(), "no snapshot");
    let rows = store
        .execute("SELECT hash FROM snapshot_chunks", Vec::new())
        .expect("chunk rows");
    assert!(rows.is_empty(), "no chunk row");
}
