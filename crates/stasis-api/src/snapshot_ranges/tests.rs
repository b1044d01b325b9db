//! A download of more chunks than one invocation may read, over a KV store
//! that counts its reads per invocation.

use super::{ranged, read_chunks};
use bytes::Bytes;
use futures::{StreamExt as _, executor::block_on};
use stasis_domain::{
    DomainError,
    chunk_store::{chunk_key, ports::BlobStore, sha256_hex},
    snapshot::{
        SnapshotMeta, StorageKind,
        chunk_calls::{ChunkSource, Plan},
        ranges::{KV_OPS_PER_INVOCATION, RANGE_CHUNKS},
        whole::WholeReader,
    },
};
use std::{cell::Cell, collections::BTreeMap, rc::Rc};

const PREFIX: &str = "t/r/a/";
const CHUNK: usize = 64;

/// The KV store's keys and values.
type Values = Rc<BTreeMap<String, Vec<u8>>>;

/// One invocation's view of the KV store: the reads it made.
struct CountingKv {
    values: Values,
    reads: Rc<Cell<usize>>,
}

impl BlobStore for CountingKv {
    async fn put(&self, _key: &str, _value: &[u8]) -> Result<(), DomainError> {
        Err(DomainError::Storage("reads only".into()))
    }
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, DomainError> {
        self.reads.set(self.reads.get() + 1);
        Ok(self.values.get(key).cloned())
    }
    async fn delete(&self, _key: &str) -> Result<(), DomainError> {
        Err(DomainError::Storage("reads only".into()))
    }
    async fn list(
        &self,
        _prefix: &str,
        _cursor: Option<String>,
    ) -> Result<(Vec<String>, Option<String>), DomainError> {
        Ok((Vec::new(), None))
    }
    fn propagation_delays_ms(&self) -> &[u64] {
        &[]
    }
    async fn pause(&self, _ms: u64) {}
}

/// A file of `chunks` chunks of distinct bytes, stored, and its plan.
fn stored(chunks: usize) -> (Vec<u8>, Values, Plan) {
    // Each chunk holds its own index, so that no two chunks are alike.
    let file: Vec<u8> = (0..chunks as u64)
        .flat_map(|index| index.to_le_bytes().repeat(CHUNK / 8))
        .collect();
    let mut values = BTreeMap::new();
    let mut names = Vec::new();
    for piece in file.chunks(CHUNK) {
        let name = sha256_hex(piece);
        values.insert(chunk_key(PREFIX, &name), piece.to_vec());
        names.push(name);
    }
    let plan = Plan {
        meta: SnapshotMeta {
            version: 1,
            sha256: sha256_hex(&file),
            size: file.len() as u64,
            storage: StorageKind::Kv,
            event_watermark: 0,
            created_at: 0,
        },
        chunk_size: CHUNK as u64,
        chunks: names,
        source: ChunkSource::Chunks,
        sha256_from_chunks: false,
    };
    (file, Rc::new(values), plan)
}

/// Reads the plan as a download does: the first piece here, the rest
/// range by range, each range in an invocation of its own. Returns what
/// came out (the error last, if any) and the reads of each invocation.
fn download(values: &Values, plan: Plan) -> (Vec<u8>, Option<DomainError>, Vec<usize>) {
    let mut reader = WholeReader::new(plan, PREFIX.to_owned());
    let here = Rc::new(Cell::new(0));
    let kv = CountingKv {
        values: Rc::clone(values),
        reads: Rc::clone(&here),
    };
    let mut bytes = block_on(reader.next_piece(&kv))
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut invocations = vec![Rc::clone(&here)];
    let rest = ranged(reader, RANGE_CHUNKS, |names| {
        let reads = Rc::new(Cell::new(0));
        invocations.push(Rc::clone(&reads));
        let kv = CountingKv {
            values: Rc::clone(values),
            reads,
        };
        read_chunks(kv, PREFIX.to_owned(), names)
    });
    let pieces: Vec<Result<Bytes, DomainError>> = block_on(rest.collect());
    let mut failure = None;
    for piece in pieces {
        match piece {
            Ok(piece) => bytes.extend_from_slice(&piece),
            Err(err) => failure = Some(err),
        }
    }
    let reads = invocations.iter().map(|reads| reads.get()).collect();
    (bytes, failure, reads)
}

#[test]
fn a_file_of_many_chunks_is_read_whole_with_every_invocation_within_its_kv_budget() {
    let (file, values, plan) = stored(2_000);
    let (bytes, failure, reads) = download(&values, plan);
    assert!(failure.is_none(), "{failure:?}");
    assert_eq!(sha256_hex(&bytes), sha256_hex(&file));
    // The first chunk here, then 1,999 in ranges of 900, 900 and 199.
    assert_eq!(reads, vec![1, 900, 900, 199]);
    assert!(reads.iter().all(|&n| n <= KV_OPS_PER_INVOCATION));
}

#[test]
fn a_file_that_fails_its_sha256_is_cut_before_its_last_byte() {
    let (file, values, mut plan) = stored(1_000);
    plan.meta.sha256 = sha256_hex(b"another file");
    let (bytes, failure, _) = download(&values, plan);
    let failure = failure.map(|err| err.to_string()).unwrap_or_default();
    assert!(failure.contains("corrupt"), "{failure}");
    assert!(bytes.len() < file.len());
}

#[test]
fn a_chunk_that_fails_its_name_cuts_the_download() {
    let (file, values, plan) = stored(1_000);
    let mut values = (*values).clone();
    let third = chunk_key(PREFIX, &plan.chunks[950]);
    values.insert(third, vec![0; CHUNK]);
    let (bytes, failure, _) = download(&Rc::new(values), plan);
    let failure = failure.map(|err| err.to_string()).unwrap_or_default();
    assert!(failure.contains("corrupt"), "{failure}");
    // Chunk 0 came first; 949 was held back when 950 failed.
    assert_eq!(bytes.len(), 949 * CHUNK);
    assert!(bytes.len() < file.len());
}
