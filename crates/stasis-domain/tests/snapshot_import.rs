//! An import's snapshot written as chunks, over real SQLite and an
//! in-memory KV store: it stays invisible until the import's commit
//! switches to it; a refused import's chunks all go with the next sweep;
//! the chunks of an import in progress outlive the pending time, while
//! those of an import whose process died go once its mark expires; and a
//! superseded import can record nothing more.

#![allow(clippy::expect_used, reason = "tests fail loudly")]
#![allow(clippy::panic, reason = "tests fail loudly")]

mod support;

use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    agent_state::{self, ImportBatch, ImportCall, ImportReply, StateCall, StateReply},
    chunk_store::{
        ChunkCall, ChunkReply, chunk_key,
        claims::Taken,
        ports::{BlobStore, LocalObject, run_ready},
        sha256_hex,
    },
    snapshot::{
        self, PutRequest, SnapshotCall, SnapshotReply, chunk_saga, saga,
        whole::{WholeReader, WholeWriter},
    },
};
use stasis_sqlite::SqliteStore;
use support::{MemoryKv, agent_store as store, noise as body};

impl MemoryKv {
    /// The chunk keys KV holds.
    fn chunk_keys(&self) -> Vec<String> {
        let prefix = chunk_key(PREFIX, "");
        let values = self.values.borrow();
        values
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .cloned()
            .collect()
    }
}

const PREFIX: &str = "t/r/a/";
const NOW: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;
const MIB: usize = 1024 * 1024;

fn env(now_ms: i64) -> ObjectEnv {
    ObjectEnv {
        now_ms,
        max_events: 10_000,
        retention: Default::default(),
    }
}

fn object(store: &SqliteStore, now_ms: i64) -> LocalObject<'_, SqliteStore> {
    LocalObject {
        store,
        env: env(now_ms),
    }
}

fn import(store: &SqliteStore, call: ImportCall) -> Result<ImportReply, DomainError> {
    match agent_state::execute(store, &StateCall::Import(call), &env(NOW))? {
        StateReply::Import(reply) => Ok(reply),
        other => panic!("unexpected {other:?}"),
    }
}

fn begin(store: &SqliteStore) -> u64 {
    match import(store, ImportCall::Begin { import_id: None }) {
        Ok(ImportReply::Ticket(ticket)) => ticket,
        other => panic!("begin: {other:?}"),
    }
}

fn snapshot_call(store: &SqliteStore, call: SnapshotCall, now_ms: i64) -> SnapshotReply {
    snapshot::execute(store, &call, &env(now_ms)).expect("the snapshot call runs")
}

/// The current snapshot's bytes, read whole and verified.
fn read_whole(store: &SqliteStore, kv: &MemoryKv) -> Vec<u8> {
    let plan = run_ready(chunk_saga::plan(&object(store, NOW), true))
        .expect("ready")
        .expect("planned")
        .expect("a snapshot");
    run_ready(WholeReader::new(plan, PREFIX.into()).read_all(kv))
        .expect("ready")
        .expect("read")
}

/// Makes `bytes` the current snapshot with a whole-file PUT.
fn put_whole(store: &SqliteStore, kv: &MemoryKv, bytes: &[u8]) {
    let object = object(store, NOW);
    let mut writer = WholeWriter::new(
        request(),
        Some(bytes.len() as u64),
        kv.min_split_chunk_size(),
    );
    run_ready(writer.write(&object, kv, bytes))
        .expect("ready")
        .expect("written");
    run_ready(writer.finish(&object, kv))
        .expect("ready")
        .expect("committed");
}

/// Streams `bytes` into an import's writer, 300,000 bytes at a time, and
/// stages it as hashing to `sha256`.
fn write_import(
    store: &SqliteStore,
    kv: &MemoryKv,
    bytes: &[u8],
    sha256: &str,
) -> (WholeWriter, Result<snapshot::StagedSnapshot, DomainError>) {
    let object = object(store, NOW);
    let mut writer = WholeWriter::for_import(
        request(),
        Some(bytes.len() as u64),
        kv.min_split_chunk_size(),
    );
    for piece in bytes.chunks(300_000) {
        run_ready(writer.write(&object, kv, piece))
            .expect("ready")
            .expect("written");
    }
    let staged = run_ready(writer.stage(&object, kv, sha256, 7)).expect("ready");
    (writer, staged)
}

fn sweep(store: &SqliteStore, kv: &MemoryKv, now_ms: i64) {
    run_ready(saga::sweep(&object(store, now_ms), kv, PREFIX, 0))
        .expect("ready")
        .expect("swept");
}

#[test]
fn an_imported_snapshot_in_chunks_becomes_current_only_at_the_commit() {
    let (store, kv) = (store(), MemoryKv::default());
    let old = body(3 * MIB, 1);
    put_whole(&store, &kv, &old);
    let ticket = begin(&store);
    let new = body(5 * MIB + 17, 2);
    let (_, staged) = write_import(&store, &kv, &new, &sha256_hex(&new));
    let staged = staged.expect("staged");
    assert_eq!(staged.chunk_size, Some(MIB as u64), "the server's split");
    assert_eq!(
        (staged.size, staged.kv_key.as_deref()),
        (new.len() as u64, None)
    );
    let batch = ImportBatch::Snapshot(Some(staged));
    import(&store, ImportCall::Stage { ticket, batch }).expect("stages");
    sweep(&store, &kv, NOW + 2 * HOUR);
    assert!(read_whole(&store, &kv) == old, "readers see the old one");
    assert_eq!(
        kv.chunk_keys().len(),
        3 + 6,
        "a sweep keeps the staged chunks"
    );
    import(&store, ImportCall::Commit { ticket }).expect("commits");
    assert!(read_whole(&store, &kv) == new, "readers see the new one");
    sweep(&store, &kv, NOW);
    assert_eq!(kv.chunk_keys().len(), 6, "the old chunks were collected");
    let meta = snapshot::current_meta(&store)
        .expect("reads")
        .expect("a snapshot");
    assert_eq!((meta.sha256, meta.event_watermark), (sha256_hex(&new), 7));
}

#[test]
fn a_refused_import_leaves_no_chunk_of_its_own_after_a_sweep() {
    let (store, kv) = (store(), MemoryKv::default());
    let old = body(2 * MIB, 3);
    put_whole(&store, &kv, &old);
    let ticket = begin(&store);
    // The first two chunks are the current snapshot's, the rest its own.
    let mut new = old.clone();
    new.extend(body(3 * MIB, 4));
    let (writer, staged) = write_import(&store, &kv, &new, &"0".repeat(64));
    let err = staged.expect_err("the sha256 does not match");
    assert_eq!(err.code(), "sha256_mismatch");
    run_ready(writer.abandon(&object(&store, NOW))).expect("ready");
    import(&store, ImportCall::Abort { ticket }).expect("aborts");
    sweep(&store, &kv, NOW);
    assert_eq!(kv.chunk_keys().len(), 2, "only the current chunks remain");
    assert!(
        read_whole(&store, &kv) == old,
        "the agent kept its snapshot"
    );
}

/// Reserves an import's manifest at `NOW` and records two chunks in KV.
fn reserve_and_record(store: &SqliteStore, kv: &MemoryKv) -> u64 {
    let reserve = SnapshotCall::ImportReserve {
        chunk_size: MIB as u64,
        pending_ttl_ms: HOUR,
    };
    let SnapshotReply::Reserved(reserved) = snapshot_call(store, reserve, NOW) else {
        panic!("reserves");
    };
    let chunks: Vec<Vec<u8>> = vec![body(MIB, 5), body(10, 6)];
    let claim = SnapshotCall::Chunk(ChunkCall::ClaimUploads {
        chunks: chunks.iter().map(|c| sha256_hex(c)).collect(),
        pending_ttl_ms: HOUR,
        stale_before: 0,
    });
    snapshot_call(store, claim, NOW);
    for chunk in &chunks {
        let key = chunk_key(PREFIX, &sha256_hex(chunk));
        run_ready(kv.put(&key, chunk)).expect("ready").expect("put");
    }
    let record = SnapshotCall::ImportRecord {
        version: reserved.version,
        chunks: chunks
            .iter()
            .map(|c| (sha256_hex(c), c.len() as u64))
            .collect(),
        pending_ttl_ms: HOUR,
    };
    snapshot_call(store, record, NOW);
    reserved.version
}

#[test]
fn an_import_in_progress_keeps_its_chunks_until_its_mark_expires() {
    let (store, kv) = (store(), MemoryKv::default());
    let _ticket = begin(&store);
    let version = reserve_and_record(&store, &kv);
    // Past the pending time of an upload, a collection alone takes nothing:
    // the import's manifest names them.
    let taken = snapshot_call(
        &store,
        SnapshotCall::Chunk(ChunkCall::CollectTake {
            limit: 10,
            stale_before: 0,
        }),
        NOW + 2 * HOUR,
    );
    let nothing = Taken {
        chunks: Vec::new(),
        claim_at: NOW + 2 * HOUR,
    };
    assert_eq!(taken, SnapshotReply::Chunk(ChunkReply::Taken(nothing)));
    // A record later pushes the mark's end further.
    let again = SnapshotCall::ImportRecord {
        version,
        chunks: Vec::new(),
        pending_ttl_ms: HOUR,
    };
    snapshot_call(&store, again, NOW + 50 * 60_000);
    sweep(&store, &kv, NOW + HOUR + 1);
    assert_eq!(kv.chunk_keys().len(), 2, "a live import's chunks stay");
    // Nothing was heard of the import for longer than the pending time:
    // its process died, and the next sweep takes its chunks.
    sweep(&store, &kv, NOW + 2 * HOUR + 1);
    assert_eq!(kv.chunk_keys(), Vec::<String>::new());
}

#[test]
fn a_superseded_import_records_nothing_more_and_its_chunks_go() {
    let (store, kv) = (store(), MemoryKv::default());
    let _first = begin(&store);
    let version = reserve_and_record(&store, &kv);
    let _second = begin(&store);
    let late = SnapshotCall::ImportRecord {
        version,
        chunks: vec![(sha256_hex(b"late"), 4)],
        pending_ttl_ms: HOUR,
    };
    let err = snapshot::execute(&store, &late, &env(NOW)).expect_err("superseded");
    assert_eq!(err.code(), "import_superseded");
    sweep(&store, &kv, NOW);
    assert_eq!(kv.chunk_keys(), Vec::<String>::new(), "nothing names them");
}

#[test]
fn a_small_imported_snapshot_stays_inline() {
    let (store, kv) = (store(), MemoryKv::default());
    let ticket = begin(&store);
    let small = body(1000, 7);
    let (_, staged) = write_import(&store, &kv, &small, &sha256_hex(&small));
    let staged = staged.expect("staged");
    assert_eq!(
        (staged.chunk_size, staged.inline.as_ref()),
        (None, Some(&small))
    );
    let batch = ImportBatch::Snapshot(Some(staged));
    import(&store, ImportCall::Stage { ticket, batch }).expect("stages");
    import(&store, ImportCall::Commit { ticket }).expect("commits");
    assert!(read_whole(&store, &kv) == small);
    assert!(kv.values.borrow().is_empty(), "nothing went to KV");
}

fn request() -> PutRequest {
    support::put_request(PREFIX, snapshot::DEFAULT_SNAPSHOT_LIMIT, 0)
}
