//! Chunked snapshots over real SQLite and an in-memory KV store: a
//! snapshot written in the layout before chunks (one KV key per version)
//! stays readable through the new paths; the whole-file writer and reader
//! round trip; a reader meeting a corrupt chunk fails before handing out
//! the rest; a collection never deletes a chunk a manifest names.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use stasis_domain::sql::SqlStore as _;
use stasis_domain::{
    DomainError,
    chunk_store::{
        self, ChunkCall, ChunkReply, chunk_key,
        claims::COLLECT_QUERIES,
        ports::{BlobStore, run_ready},
        sha256_hex,
    },
    snapshot::{
        self, PutRequest,
        chunk_calls::ChunkSource,
        chunk_saga,
        manifest::Manifest,
        saga,
        whole::{WholeReader, WholeWriter},
    },
};
use stasis_sqlite::SqliteStore;
use support::{MemoryKv, agent_object as object, agent_store as store, noise as body};

const PREFIX: &str = "t/r/a/";

/// Writes `bytes` through the whole-file writer, `piece` bytes at a time.
fn write_whole(store: &SqliteStore, kv: &MemoryKv, bytes: &[u8], size_hint: u64) {
    let object = object(store);
    let mut writer = WholeWriter::new(request(), Some(size_hint), kv.min_split_chunk_size());
    for piece in bytes.chunks(300_000) {
        run_ready(writer.write(&object, kv, piece))
            .expect("ready")
            .expect("written");
    }
    run_ready(writer.finish(&object, kv))
        .expect("ready")
        .expect("committed");
    // As the API does after every whole-file PUT.
    run_ready(saga::sweep(&object, kv, PREFIX, 0))
        .expect("ready")
        .expect("swept");
}

fn read_whole(store: &SqliteStore, kv: &MemoryKv) -> Result<Vec<u8>, DomainError> {
    let plan = run_ready(chunk_saga::plan(&object(store), true))
        .expect("ready")?
        .expect("a snapshot");
    run_ready(WholeReader::new(plan, PREFIX.into()).read_all(kv)).expect("ready")
}

#[test]
fn a_snapshot_in_the_layout_before_chunks_stays_readable() {
    let (store, kv) = (store(), MemoryKv::default());
    // The release before chunks stored this as one KV key, `v1`.
    let old = body(5_000, 1);
    run_ready(saga::put(&object(&store), &kv, &request(), &old))
        .expect("ready")
        .expect("stored");
    assert!(kv.values.borrow().contains_key(&format!("{PREFIX}v1")));
    let plan = run_ready(chunk_saga::plan(&object(&store), false))
        .expect("ready")
        .expect("read")
        .expect("a snapshot");
    assert_eq!(plan.chunks, vec![sha256_hex(&old)]);
    assert_eq!(plan.chunk_size, 8_192);
    assert!(matches!(plan.source, ChunkSource::Key { .. }));
    assert_eq!(read_whole(&store, &kv).expect("whole"), old);
    let chunk = run_ready(chunk_saga::get_chunk(
        &object(&store),
        &kv,
        PREFIX,
        &sha256_hex(&old),
    ));
    assert_eq!(chunk.expect("ready").expect("read"), Some(old));
    // A chunked snapshot supersedes it, and its single key goes.
    let new = body(3_000_000, 2);
    write_whole(&store, &kv, &new, new.len() as u64);
    assert!(!kv.values.borrow().contains_key(&format!("{PREFIX}v1")));
    assert_eq!(read_whole(&store, &kv).expect("whole"), new);
}

#[test]
fn the_whole_file_writer_splits_and_the_reader_assembles() {
    let (store, kv) = (store(), MemoryKv::default());
    let bytes = body(2_500_000, 3);
    write_whole(&store, &kv, &bytes, bytes.len() as u64);
    let chunk_keys = kv.values.borrow().len();
    assert_eq!(chunk_keys, 3, "1 MiB chunks: 1 MiB, 1 MiB and the rest");
    assert_eq!(read_whole(&store, &kv).expect("whole"), bytes);
}

#[test]
fn a_corrupt_chunk_stops_the_reader_before_the_rest_is_handed_out() {
    let (store, kv) = (store(), MemoryKv::default());
    let bytes = body(2_500_000, 4);
    write_whole(&store, &kv, &bytes, bytes.len() as u64);
    let plan = run_ready(chunk_saga::plan(&object(&store), true))
        .expect("ready")
        .expect("read")
        .expect("a snapshot");
    let second = chunk_key(PREFIX, &plan.chunks[1]);
    kv.values
        .borrow_mut()
        .get_mut(&second)
        .expect("the second chunk")[10] ^= 1;
    let mut reader = WholeReader::new(plan, PREFIX.into());
    let first = run_ready(reader.next_piece(&kv)).expect("ready");
    assert_eq!(
        first.expect("the first chunk").expect("bytes").len(),
        1 << 20
    );
    let err = run_ready(reader.next_piece(&kv))
        .expect("ready")
        .expect_err("the corrupt chunk is refused");
    assert!(err.to_string().contains("snapshot_corrupt"), "{err}");
}

#[test]
fn a_collection_keeps_every_chunk_a_manifest_names() {
    let (store, kv) = (store(), MemoryKv::default());
    let first = body(2_500_000, 5);
    write_whole(&store, &kv, &first, first.len() as u64);
    let mut second = first.clone();
    second[2_400_000] ^= 1; // only the last chunk changes
    write_whole(&store, &kv, &second, second.len() as u64);
    run_ready(chunk_store::saga::collect_all(
        &object(&store),
        &kv,
        PREFIX,
        0,
        10,
    ))
    .expect("ready")
    .expect("collected");
    assert_eq!(
        kv.values.borrow().len(),
        3,
        "the superseded last chunk went"
    );
    assert_eq!(read_whole(&store, &kv).expect("whole"), second);
}

#[test]
fn a_collected_chunk_uploaded_again_is_stored_at_once_and_a_dead_collection_blocks_nothing() {
    let (store, kv) = (store(), MemoryKv::default());
    let first = body(2_500_000, 6);
    write_whole(&store, &kv, &first, first.len() as u64);
    let mut second = first.clone();
    second[2_400_000] ^= 1;
    // Commits and collects the first file's last chunk at the object's clock.
    write_whole(&store, &kv, &second, second.len() as u64);
    let last = &first[2 << 20..];
    let name = sha256_hex(last);
    let put = |stale_before| {
        let upload = chunk_store::saga::Upload {
            pending_ttl_ms: chunk_store::PENDING_CHUNK_TTL_MS,
            stale_before,
        };
        run_ready(chunk_store::saga::put_chunk(
            &object(&store),
            &kv,
            PREFIX,
            &name,
            last,
            upload,
        ))
        .expect("ready")
    };
    assert!(
        put(0).expect("stored"),
        "collected, then stored again at once"
    );
    assert!(kv.values.borrow().contains_key(&chunk_key(PREFIX, &name)));
    // A collection takes it again and dies before its KV delete: its claim
    // holds an upload off while it may still run, and is taken over once
    // it is known dead (the process restarted, or its lease passed).
    let later = object(&store).env.now_ms + 2 * chunk_store::PENDING_CHUNK_TTL_MS;
    let take = snapshot::SnapshotCall::Chunk(ChunkCall::CollectTake {
        limit: 10,
        stale_before: 0,
    });
    let env = stasis_domain::agent::ObjectEnv {
        now_ms: later,
        max_events: 10_000,
        // Superseded versions go at once: these tests check collection
        // (history has tests of its own).
        retention: stasis_domain::history::RetentionPolicy::KEEP_NONE,
    };
    let taken = snapshot::execute(&store, &take, &env).expect("taken");
    let claim = chunk_store::claims::Taken {
        chunks: vec![name.clone()],
        claim_at: later,
    };
    assert_eq!(
        taken,
        snapshot::SnapshotReply::Chunk(ChunkReply::Taken(claim))
    );
    let busy = |result: Result<bool, DomainError>| matches!(result, Err(DomainError::Unavailable(r)) if r.code == "chunk_being_collected");
    assert!(busy(put(later)), "a live collection's claim");
    assert!(
        put(later + 1).expect("stored"),
        "a dead collection's claim is taken over"
    );
    let held = run_ready(chunk_store::saga::missing(
        &object(&store),
        vec![name.clone()],
        0,
    ))
    .expect("ready")
    .expect("asked");
    assert!(held.is_empty(), "the chunk is held again");
}

/// Commits `file` as a client's delta push does: its 64 KiB chunks
/// uploaded, then a manifest that claims `sha256` for the whole.
fn commit_as_client(store: &SqliteStore, kv: &MemoryKv, file: &[u8], sha256: &str) {
    const CHUNK: usize = 64 * 1024;
    let upload = chunk_store::saga::Upload {
        pending_ttl_ms: chunk_store::PENDING_CHUNK_TTL_MS,
        stale_before: 0,
    };
    let mut chunks = Vec::new();
    for piece in file.chunks(CHUNK) {
        let name = sha256_hex(piece);
        run_ready(chunk_store::saga::put_chunk(
            &object(store),
            kv,
            PREFIX,
            &name,
            piece,
            upload,
        ))
        .expect("ready")
        .expect("stored");
        chunks.push(name);
    }
    let manifest = Manifest {
        size: file.len() as u64,
        sha256: sha256.to_owned(),
        chunk_size: CHUNK as u64,
        chunks,
    };
    let commit = chunk_saga::CommitRequest {
        manifest: manifest.check().expect("a valid manifest"),
        precondition: None,
        event_watermark: None,
        limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
        sha256_from_chunks: false,
        grace_ms: 0,
    };
    run_ready(chunk_saga::commit(&object(store), kv, commit))
        .expect("ready")
        .expect("committed");
    // As the API does after every manifest commit.
    run_ready(chunk_store::saga::collect(&object(store), kv, PREFIX, 0))
        .expect("ready")
        .expect("collected");
}

fn hashed_marks(store: &SqliteStore) -> usize {
    store
        .execute("SELECT version FROM snapshot_hashed_manifests", Vec::new())
        .expect("read")
        .len()
}

#[test]
fn only_a_manifest_the_server_hashed_is_read_without_hashing_the_whole_file_again() {
    let (store, kv) = (store(), MemoryKv::default());
    let plan = || {
        run_ready(chunk_saga::plan(&object(&store), false))
            .expect("ready")
            .expect("read")
            .expect("a snapshot")
    };
    let put = body(3_000_000, 7);
    write_whole(&store, &kv, &put, put.len() as u64);
    assert!(
        plan().sha256_from_chunks,
        "a whole-file PUT's sha256 is the server's"
    );
    assert_eq!(read_whole(&store, &kv).expect("whole"), put);

    // A client's sha256 is only claimed: a reader still checks it, and a
    // false claim is refused however sound each chunk is.
    let pushed = body(300_000, 8);
    commit_as_client(&store, &kv, &pushed, &sha256_hex(&pushed));
    assert!(!plan().sha256_from_chunks);
    assert_eq!(read_whole(&store, &kv).expect("whole"), pushed);
    commit_as_client(
        &store,
        &kv,
        &pushed[..200_000],
        &sha256_hex(b"another file"),
    );
    let refused = read_whole(&store, &kv).expect_err("a false sha256");
    assert!(refused.to_string().contains("corrupt"), "{refused}");

    // The mark goes with its manifest.
    assert_eq!(hashed_marks(&store), 0, "superseded, its mark went");
    let again = body(2_000_000, 9);
    write_whole(&store, &kv, &again, again.len() as u64);
    assert_eq!(hashed_marks(&store), 1);
}

fn request() -> PutRequest {
    support::put_request(PREFIX, snapshot::DEFAULT_SNAPSHOT_LIMIT, 0)
}

/// A chunk table made before its partial indexes (one index over every row)
/// gets them when opened, and collection reads each kind of row through its
/// index instead of scanning every chunk.
#[test]
fn collection_reads_its_indexes_and_an_older_table_gets_them() {
    let store = SqliteStore::in_memory().expect("sqlite");
    store
        .run(
            "CREATE TABLE snapshot_chunks (hash BLOB PRIMARY KEY, size INTEGER NOT NULL,
                state TEXT NOT NULL, refs INTEGER NOT NULL, pending_until INTEGER NOT NULL,
                changed_at INTEGER NOT NULL)",
            Vec::new(),
        )
        .expect("the older table");
    store
        .run(
            "CREATE INDEX snapshot_chunks_by_refs ON snapshot_chunks (refs, state, pending_until)",
            Vec::new(),
        )
        .expect("the older index");
    stasis_domain::agent::migrate(&store).expect("migrated");
    let indexes: Vec<String> = store
        .execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'snapshot_chunks'
             AND sql IS NOT NULL ORDER BY name",
            Vec::new(),
        )
        .expect("indexes")
        .iter()
        .map(|row| {
            stasis_domain::sql::RowExt::text(row.as_slice(), 0)
                .expect("name")
                .to_owned()
        })
        .collect();
    assert_eq!(
        indexes,
        [
            "snapshot_chunks_deleting",
            "snapshot_chunks_unnamed",
            "snapshot_chunks_uploading"
        ]
    );
    // What `collect_take` asks: each a range of an index.
    for (query, index) in [
        (COLLECT_QUERIES[0], "snapshot_chunks_unnamed"),
        (COLLECT_QUERIES[1], "snapshot_chunks_uploading"),
        (COLLECT_QUERIES[2], "snapshot_chunks_deleting"),
    ] {
        let plan = store
            .execute(
                &format!("EXPLAIN QUERY PLAN {query}"),
                vec![1_i64.into(), 10_i64.into()],
            )
            .expect("plan");
        let detail: Vec<String> = plan
            .iter()
            .map(|row| {
                stasis_domain::sql::RowExt::text(row.as_slice(), 3)
                    .expect("detail")
                    .to_owned()
            })
            .collect();
        assert!(
            detail.iter().any(|d| d.contains(index)),
            "{query}: {detail:?}"
        );
    }
}
