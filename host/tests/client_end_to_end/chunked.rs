//! g. chunked snapshots against the real host: a push after a small change sends only the
//! chunks that changed, a pull after a push fetches nothing, a rotten cache entry is noticed and
//! fetched again, and a cold pull (most bytes, many chunks) takes the whole file in one GET and
//! fills the cache from it; a fenced
//! container's delta push stores nothing and fails with the fenced error.

use std::path::Path;

use stasis_api::auth::Scope;
use stasis_client::backup::{BackupOptions, backup_database};
use stasis_client::snapshot::{
    self, ChunkCache, ChunkedFile, PullOptions, PullOutcome, PulledSnapshot, PushOptions,
    PushReceipt, TransferMode,
};
use stasis_client::{AgentRef, Client, Config, exit};

use crate::helpers::{
    append_rows, call, client, create_db, entries, head_snapshot, rows_for, sha256_file,
    start_server,
};
use crate::support::{DAY, Server, mint};

/// A consistent copy of `db` at `copy`, and its chunks.
fn copy_of(db: &Path, copy: &Path) -> ChunkedFile {
    backup_database(db, copy, &BackupOptions::default(), |_, _| {}).expect("backup");
    ChunkedFile::scan(copy).expect("scan")
}

fn upload(server: &Server, who: &AgentRef, file: &Path, options: &PushOptions) -> PushReceipt {
    let chunked = ChunkedFile::scan(file).expect("scan");
    snapshot::upload_file(&client(server), who, file, &chunked, options).expect("push")
}

fn pulled(server: &Server, who: &AgentRef, out: &Path, options: &PullOptions) -> PulledSnapshot {
    match snapshot::pull(&client(server), who, out, options).expect("pull") {
        PullOutcome::Pulled(pulled) => pulled,
        PullOutcome::NoSnapshot => panic!("the snapshot is there"),
    }
}

#[test]
fn a_push_after_a_small_change_sends_only_the_changed_chunks_and_a_pull_after_it_fetches_none() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("live/kilo.db");
    create_db(&db, rows_for(6_000_000), "wal");
    let mayor = AgentRef::new("e2e-chunks", "hq", "mayor").expect("ids");
    let cache = ChunkCache::new(work.path().join("cache"), 1 << 30);
    let options = PushOptions {
        cache: Some(cache.clone()),
        ..PushOptions::default()
    };

    let before = copy_of(&db, &work.path().join("v1.db"));
    let first = upload(&server, &mayor, &work.path().join("v1.db"), &options);
    let sent = first.transfer.expect("transfer");
    assert_eq!(sent.mode, TransferMode::Chunks);
    assert_eq!(sent.chunks_total, before.chunks.len() as u64);
    assert_eq!(sent.chunks_sent, before.unique_chunks().len() as u64);
    assert_eq!(
        sent.bytes_sent, before.size,
        "a first push sends every byte once"
    );

    // One turn's worth of writes: a few rows appended.
    append_rows(&db, 3);
    let after = copy_of(&db, &work.path().join("v2.db"));
    let changed: Vec<String> = after
        .unique_chunks()
        .into_iter()
        .filter(|c| !before.chunks.contains(c))
        .collect();
    let second = upload(&server, &mayor, &work.path().join("v2.db"), &options);
    let sent = second.transfer.expect("transfer");
    assert_eq!(sent.mode, TransferMode::Chunks);
    assert!(
        !changed.is_empty() && changed.len() <= 10,
        "{}",
        changed.len()
    );
    assert_eq!(sent.chunks_sent, changed.len() as u64);
    assert!(
        sent.bytes_sent <= changed.len() as u64 * after.chunk_size,
        "{} bytes for {} chunks",
        sent.bytes_sent,
        changed.len()
    );
    assert!(
        sent.bytes_sent * 20 < after.size,
        "well under 5 % of the file"
    );
    assert_eq!(second.version, first.version + 1);
    assert_eq!(head_snapshot(&server, &mayor).1, Some(after.sha256.clone()));
    let third = upload(&server, &mayor, &work.path().join("v2.db"), &options);
    let sent = third.transfer.expect("transfer");
    assert_eq!(
        (sent.chunks_sent, sent.bytes_sent),
        (0, 0),
        "nothing changed"
    );

    // The push filled the cache: the pull asks for the manifest and nothing else.
    let out = work.path().join("restored/kilo.db");
    let pull_options = PullOptions {
        cache: Some(cache.clone()),
        ..PullOptions::default()
    };
    let back = pulled(&server, &mayor, &out, &pull_options);
    let fetched = back.transfer.expect("transfer");
    assert_eq!((fetched.chunks_fetched, fetched.bytes_fetched), (0, 0));
    assert_eq!(fetched.chunks_cached, after.unique_chunks().len() as u64);
    assert_eq!(back.sha256, after.sha256);
    assert_eq!(sha256_file(&out), after.sha256);
    assert_eq!(entries(out.parent().expect("parent")), ["kilo.db"]);

    // A rotten cache entry is noticed by its hash and fetched again; the file is whole.
    let rotten = cache.dir().join(&after.chunks[1]);
    let mut bytes = std::fs::read(&rotten).expect("a cache entry");
    bytes[7] ^= 0x40;
    std::fs::write(&rotten, bytes).expect("rot");
    let again = work.path().join("again/kilo.db");
    let back = pulled(&server, &mayor, &again, &pull_options);
    let fetched = back.transfer.expect("transfer");
    assert_eq!((fetched.chunks_fetched, fetched.cache_rejected), (1, 1));
    assert_eq!(fetched.bytes_fetched, after.chunk_size);
    assert_eq!(sha256_file(&again), after.sha256);
    assert_eq!(
        sha256_file(&rotten),
        after.chunks[1],
        "the entry is whole again"
    );

    // Without a cache, most of the bytes in many chunks: one whole-file GET instead.
    assert!(
        after.unique_chunks().len() >= 64,
        "enough chunks to go whole"
    );
    let cold = work.path().join("cold/kilo.db");
    let back = pulled(&server, &mayor, &cold, &PullOptions::default());
    let fetched = back.transfer.expect("transfer");
    assert_eq!(fetched.mode, TransferMode::WholeFile);
    assert_eq!(fetched.bytes_fetched, after.size);
    assert_eq!(sha256_file(&cold), after.sha256);

    // A cold cache goes whole too, and is filled from the file: the next pull fetches nothing.
    let fresh = ChunkCache::new(work.path().join("fresh-cache"), 1 << 30);
    let fresh_options = PullOptions {
        cache: Some(fresh.clone()),
        ..PullOptions::default()
    };
    let first = pulled(
        &server,
        &mayor,
        &work.path().join("c1/kilo.db"),
        &fresh_options,
    );
    assert_eq!(
        first.transfer.expect("transfer").mode,
        TransferMode::WholeFile
    );
    let second = pulled(
        &server,
        &mayor,
        &work.path().join("c2/kilo.db"),
        &fresh_options,
    );
    let fetched = second.transfer.expect("transfer");
    assert_eq!(fetched.mode, TransferMode::Chunks);
    assert_eq!((fetched.chunks_fetched, fetched.cache_rejected), (0, 0));
    assert_eq!(fetched.chunks_cached, after.unique_chunks().len() as u64);
    assert_eq!(sha256_file(&work.path().join("c2/kilo.db")), after.sha256);
}

/// A container token's client pushes in chunks while its container holds the town; once another
/// container has heartbeat, its next delta push is refused at its first request (`missing`), so
/// no chunk of it is stored, and the error is the fenced one (exit 9). Its pulls still work.
#[test]
fn a_fenced_containers_delta_push_stops_at_its_first_request_and_its_pulls_still_work() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("live/kilo.db");
    create_db(&db, rows_for(3_000_000), "wal");
    let town = "e2e-fenced-chunks";
    let mayor = AgentRef::new(town, "hq", "mayor").expect("ids");
    let beat = |container: &str| {
        let body = serde_json::json!({ "container_id": container });
        let path = format!("/api/towns/{town}/heartbeat");
        assert_eq!(call(&server, "POST", &path, Some(&body)).0, 200);
    };
    let scope = Scope::Container {
        town: town.to_owned(),
        container_id: "c-old".to_owned(),
    };
    let zombie = Client::new(Config::new(&server.base, Some(mint(scope, DAY))).expect("config"));
    beat("c-old");
    let first = copy_of(&db, &work.path().join("v1.db"));
    let options = PushOptions::default();
    let pushed = snapshot::upload_file(
        &zombie,
        &mayor,
        &work.path().join("v1.db"),
        &first,
        &options,
    )
    .expect("a push while c-old holds the town");
    assert_eq!(
        pushed.transfer.expect("transfer").mode,
        TransferMode::Chunks
    );

    beat("c-new");
    append_rows(&db, 3);
    let second = copy_of(&db, &work.path().join("v2.db"));
    let refused = snapshot::upload_file(
        &zombie,
        &mayor,
        &work.path().join("v2.db"),
        &second,
        &options,
    )
    .expect_err("a fenced push");
    assert!(refused.is_fenced(), "{refused}");
    assert_eq!(refused.exit_code(), exit::FENCED, "{refused}");
    assert!(refused.to_string().contains("c-new"), "{refused}");
    assert_eq!(head_snapshot(&server, &mayor).1, Some(first.sha256.clone()));
    let changed: Vec<String> = second
        .unique_chunks()
        .into_iter()
        .filter(|c| !first.chunks.contains(c))
        .collect();
    let path = mayor.path("/db-snapshot/missing");
    let (_, answer) = call(
        &server,
        "POST",
        &path,
        Some(&serde_json::json!({ "chunks": changed })),
    );
    assert_eq!(
        answer["missing"].as_array().map(Vec::len),
        Some(changed.len()),
        "none of the fenced push's chunks was stored: {answer}"
    );

    let out = work.path().join("pulled/kilo.db");
    let pulled = pulled_with(&zombie, &mayor, &out);
    assert_eq!(pulled.sha256, first.sha256);
}

fn pulled_with(client: &Client, who: &AgentRef, out: &Path) -> PulledSnapshot {
    match snapshot::pull(client, who, out, &PullOptions::default()).expect("pull") {
        PullOutcome::Pulled(pulled) => pulled,
        PullOutcome::NoSnapshot => panic!("the snapshot is there"),
    }
}
