//! a. push while another process writes, pull back verified.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;
use stasis_client::backup::BackupOptions;
use stasis_client::snapshot::{self, PullOptions, PullOutcome, PushOptions};
use stasis_client::{AgentRef, exit};

use crate::helpers::{
    BATCH, SEED_ROWS, append_rows, assert_consistent_prefix, client, create_db, entries,
    head_snapshot, impatient_client, max_id, rows_for, sha256_file, start_server, start_writer,
    wait_for_batches,
};

#[test]
fn a_live_database_pushed_while_another_process_writes_pulls_back_as_a_consistent_prefix() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let live = work
        .path()
        .join("agent-home-mayor/.local/share/kilo/kilo.db");
    create_db(&live, SEED_ROWS, "wal");
    assert!(std::fs::metadata(&live).expect("size").len() > 4_000_000);

    let writer = start_writer(&live);
    let reader = Connection::open(&live).expect("reader");
    wait_for_batches(&reader, SEED_ROWS, 20);
    let before = max_id(&reader);
    let mayor = AgentRef::new("e2e-a", "hq", "mayor").expect("ids");
    // Small backup steps with pauses: the copy spans many of the writer's commits.
    let options = PushOptions {
        backup: BackupOptions {
            pages_per_step: 64,
            pause_between_steps: Duration::from_millis(2),
            ..BackupOptions::default()
        },
        ..PushOptions::default()
    };
    let receipt = snapshot::push(&client(&server), &mayor, &live, &options)
        .expect("push while the writer writes");
    let after_push = max_id(&reader);
    // The writer was not stopped by the copy: it carries on past it.
    wait_for_batches(&reader, after_push, 20);

    let out = work.path().join("restored/kilo.db");
    let pulled = match snapshot::pull(&client(&server), &mayor, &out, &PullOptions::default()) {
        Ok(PullOutcome::Pulled(pulled)) => pulled,
        other => panic!("expected the snapshot, got {other:?}"),
    };
    let after = max_id(&reader);
    assert!(writer.stop(), "the writer ran without error");

    assert_eq!(receipt.storage.as_deref(), Some("kv"));
    assert_eq!((pulled.version, pulled.size), (Some(1), receipt.size));
    let copied = assert_consistent_prefix(&out);
    assert!(
        after_push > before,
        "the writer committed while the push ran"
    );
    assert!(
        before <= copied && copied < after,
        "{before} <= {copied} < {after}"
    );
    assert_eq!(
        (copied - SEED_ROWS) % BATCH,
        0,
        "the copy ends on a transaction"
    );
    let (status, server_sha) = head_snapshot(&server, &mayor);
    assert_eq!(status, 200);
    let file_sha = sha256_file(&out);
    assert_eq!(server_sha.as_deref(), Some(file_sha.as_str()));
    assert_eq!(
        (pulled.sha256.as_str(), receipt.sha256.as_str()),
        (file_sha.as_str(), file_sha.as_str())
    );
    assert_eq!(entries(out.parent().expect("parent")), ["kilo.db"]);
}

#[test]
fn a_pull_that_cannot_complete_leaves_no_partial_file() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let source = work.path().join("source.db");
    create_db(&source, rows_for(1_500_000), "wal");
    let mayor = AgentRef::new("e2e-fail", "hq", "mayor").expect("ids");
    let receipt =
        snapshot::push(&client(&server), &mayor, &source, &PushOptions::default()).expect("push");
    assert_eq!(receipt.storage.as_deref(), Some("kv"));

    // The parent is a file: nothing can be created there.
    let blocker = work.path().join("not-a-dir");
    std::fs::write(&blocker, b"a file").expect("file");
    let error = snapshot::pull(
        &client(&server),
        &mayor,
        &blocker.join("kilo.db"),
        &PullOptions::default(),
    )
    .expect_err("no directory to write in");
    assert_eq!(error.exit_code(), exit::LOCAL, "{error}");
    assert_eq!(std::fs::read(&blocker).expect("read"), b"a file");

    // A read-only directory (meaningless for root, who writes anyway).
    let locked = work.path().join("read-only");
    std::fs::create_dir(&locked).expect("dir");
    set_mode(&locked, 0o555);
    if std::fs::write(locked.join("probe"), b"").is_err() {
        let error = snapshot::pull(
            &client(&server),
            &mayor,
            &locked.join("kilo.db"),
            &PullOptions::default(),
        )
        .expect_err("a read-only directory");
        assert_eq!(error.exit_code(), exit::LOCAL, "{error}");
        assert!(entries(&locked).is_empty());
    }
    set_mode(&locked, 0o755);

    // The stored copy rots: the server refuses to send it, the pull fails after its retries,
    // and the old database is left as it was with nothing beside it.
    // Every chunk rots, so the first one read already fails (a later one
    // would cut the response instead of answering 500).
    let chunks = data.path().join("kv/snapshots/e2e-fail/hq/mayor/chunks");
    for chunk in std::fs::read_dir(&chunks).expect("the chunks").flatten() {
        let mut rotten = std::fs::read(chunk.path()).expect("a chunk");
        let middle = rotten.len() / 2;
        rotten[middle] ^= 0xff;
        std::fs::write(chunk.path(), rotten).expect("rot");
    }
    let home = work.path().join("home");
    std::fs::create_dir(&home).expect("dir");
    std::fs::write(home.join("kilo.db"), b"the old database").expect("old");
    let error = snapshot::pull(
        &impatient_client(&server),
        &mayor,
        &home.join("kilo.db"),
        &PullOptions::default(),
    )
    .expect_err("corrupt bytes are never sent");
    assert_ne!(error.exit_code(), exit::OK);
    assert_eq!(error.status(), Some(500), "{error}");
    assert_eq!(
        std::fs::read(home.join("kilo.db")).expect("read"),
        b"the old database"
    );
    assert_eq!(entries(&home), ["kilo.db"]);
}

#[test]
fn a_push_guarded_by_if_match_stores_on_the_current_etag_and_is_refused_on_a_stale_one() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("kilo.db");
    create_db(&db, 50, "wal");
    let mayor = AgentRef::new("e2e-etag", "hq", "mayor").expect("ids");
    let client = client(&server);
    let first = snapshot::push(&client, &mayor, &db, &PushOptions::default()).expect("v1");
    append_rows(&db, 10);
    let guarded = |etag: &str| PushOptions {
        if_match: Some(etag.to_owned()),
        event_seq: Some(7),
        ..PushOptions::default()
    };
    let etag = first.etag.clone().expect("an ETag");
    let second = snapshot::push(&client, &mayor, &db, &guarded(&etag)).expect("v2");
    assert_eq!((second.version, second.event_watermark), (2, Some(7)));
    let error = snapshot::push(&client, &mayor, &db, &guarded(&etag)).expect_err("stale");
    assert_eq!(
        (error.status(), error.code()),
        (Some(412), Some("precondition_failed"))
    );
    assert_eq!(error.exit_code(), exit::REFUSED);
    assert_eq!(
        head_snapshot(&server, &mayor).1.as_deref(),
        Some(second.sha256.as_str())
    );
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
