//! The acceptance test for `snapshot push`: the copy that push uploads is taken with
//! SQLite's online backup API while a *separate process* keeps inserting rows, and it must be
//! a consistent database: `PRAGMA integrity_check` says ok, and its rows are a prefix 1..=k
//! with no gaps that ends on a transaction boundary (each writer transaction inserts `BATCH`
//! rows and bumps a counter in another table; the copy's counter must equal k).
//!
//! The writer is this same test binary, re-run with `STASIS_TEST_WRITER_DB` set, so that it
//! holds its own SQLite connection (and file locks) in another process, like kilo does.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

#[path = "support/child_writer.rs"]
mod child_writer;

use std::path::Path;
use std::time::{Duration, Instant};

use child_writer::Writer;
use rusqlite::Connection;
use stasis_client::backup::{BackupOptions, backup_database, backup_to_memory};

const WRITER_ENV: &str = "STASIS_TEST_WRITER_DB";
/// Rows per writer transaction.
const BATCH: i64 = 7;
/// Rows in the database before the writer starts (about 5 MB with the payloads and index).
const SEED_ROWS: i64 = 5_000;

/// Not a test of its own: the writer process, active only when re-run by the tests below.
#[test]
fn writer_process() {
    if let Ok(path) = std::env::var(WRITER_ENV) {
        write_until_stopped(Path::new(&path));
    }
}

fn write_until_stopped(path: &Path) {
    child_writer::write_until_stopped(path, |tx| {
        let next: i64 = tx
            .query_row("SELECT coalesce(max(id), 0) + 1 FROM rows", [], |r| {
                r.get(0)
            })
            .expect("next id");
        for id in next..next + BATCH {
            tx.execute(
                "INSERT INTO rows (id, tag, payload) VALUES (?1, ?2, randomblob(700))",
                rusqlite::params![id, format!("tag-{}", id % 97)],
            )
            .expect("insert");
        }
        tx.execute("UPDATE meta SET total = total + ?1", [BATCH])
            .expect("count");
    });
}

fn create_seeded(path: &Path, journal_mode: &str) {
    let mut conn = Connection::open(path).expect("open");
    conn.pragma_update(None, "journal_mode", journal_mode)
        .expect("journal mode");
    let tx = conn.transaction().expect("begin");
    tx.execute_batch(
        "CREATE TABLE rows (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, payload BLOB NOT NULL);
         CREATE INDEX rows_tag ON rows (tag);
         CREATE TABLE meta (total INTEGER NOT NULL);",
    )
    .expect("schema");
    for id in 1..=SEED_ROWS {
        tx.execute(
            "INSERT INTO rows (id, tag, payload) VALUES (?1, ?2, randomblob(700))",
            rusqlite::params![id, format!("tag-{}", id % 97)],
        )
        .expect("seed");
    }
    tx.execute("INSERT INTO meta (total) VALUES (?1)", [SEED_ROWS])
        .expect("meta");
    tx.commit().expect("commit");
}

fn max_id(conn: &Connection) -> i64 {
    conn.query_row("SELECT max(id) FROM rows", [], |r| r.get(0))
        .expect("max id")
}

fn wait_for_writes(reader: &Connection) {
    let until = Instant::now() + Duration::from_secs(30);
    while max_id(reader) < SEED_ROWS + 10 * BATCH {
        assert!(Instant::now() < until, "the writer process never wrote");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Checks the copy and answers its row count.
fn assert_consistent(copy: &Path) -> i64 {
    let conn = Connection::open(copy).expect("the copy opens with SQLite");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    let (count, min, max): (i64, i64, i64) = conn
        .query_row("SELECT count(*), min(id), max(id) FROM rows", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .expect("counts");
    assert_eq!(min, 1, "the copy starts at row 1");
    assert_eq!(count, max, "rows 1..={max} with no gap");
    assert_eq!(
        (max - SEED_ROWS) % BATCH,
        0,
        "the copy ends on a transaction"
    );
    let total: i64 = conn
        .query_row("SELECT total FROM meta", [], |r| r.get(0))
        .expect("meta");
    assert_eq!(total, max, "both tables come from the same commit");
    let tagged: i64 = conn
        .query_row(
            "SELECT count(*) FROM rows INDEXED BY rows_tag WHERE tag >= ''",
            [],
            |r| r.get(0),
        )
        .expect("index scan");
    assert_eq!(tagged, count, "the index matches the table");
    max
}

fn small_steps() -> BackupOptions {
    BackupOptions {
        pages_per_step: 32,
        pause_between_steps: Duration::from_millis(3),
        lock_wait: Duration::from_secs(30),
    }
}

#[test]
fn a_wal_database_written_by_another_process_copies_as_a_consistent_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("kilo.db");
    create_seeded(&db, "wal");
    let size = std::fs::metadata(&db).expect("size").len();
    assert!(size > 4_000_000, "the database is a few MB ({size} bytes)");

    let writer = Writer::start(&db, WRITER_ENV);
    let reader = Connection::open(&db).expect("reader");
    wait_for_writes(&reader);
    let before = max_id(&reader);

    let out_dir = tempfile::tempdir().expect("tempdir");
    let copy = out_dir.path().join("copy.db");
    let mut during = Vec::new();
    let stats = backup_database(&db, &copy, &small_steps(), |done, total| {
        if done < total {
            during.push(max_id(&reader));
        }
    })
    .expect("backup");
    let after = max_id(&reader);
    assert!(writer.stop(), "the writer ran without error");

    assert!(stats.steps > 20, "the backup took {} steps", stats.steps);
    let copied = assert_consistent(&copy);
    assert!(
        before <= copied && copied <= after,
        "{before} <= {copied} <= {after}"
    );
    let last_seen = during.last().copied().unwrap_or(before);
    assert!(
        last_seen > copied,
        "the writer committed during the backup ({last_seen} rows by its last step), \
         and the copy kept its one snapshot ({copied} rows)"
    );
    assert_eq!(
        support_entries(out_dir.path()),
        ["copy.db"],
        "the copy is one self-contained file"
    );
}

/// The copy a push takes into memory (small databases) holds the same guarantee.
#[test]
fn a_copy_into_memory_while_another_process_writes_is_a_consistent_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("kilo.db");
    create_seeded(&db, "wal");
    let writer = Writer::start(&db, WRITER_ENV);
    let reader = Connection::open(&db).expect("reader");
    wait_for_writes(&reader);
    let before = max_id(&reader);

    let mut copy = backup_to_memory(&db, &small_steps(), u64::MAX)
        .expect("backup")
        .expect("under the limit");
    let after = max_id(&reader);
    let out_dir = tempfile::tempdir().expect("tempdir");
    let file = out_dir.path().join("copy.db");
    std::fs::write(&file, &*copy.bytes().expect("bytes")).expect("write the copy");
    assert!(writer.stop(), "the writer ran without error");

    let copied = assert_consistent(&file);
    assert!(
        before <= copied && copied <= after && before < after,
        "{before} <= {copied} <= {after}, the writer committing meanwhile"
    );
}

#[test]
fn a_rollback_journal_database_written_by_another_process_copies_consistently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("kilo.db");
    create_seeded(&db, "delete");

    let writer = Writer::start(&db, WRITER_ENV);
    let reader = Connection::open(&db).expect("reader");
    reader
        .busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    wait_for_writes(&reader);
    let before = max_id(&reader);
    drop(reader);

    let out_dir = tempfile::tempdir().expect("tempdir");
    let copy = out_dir.path().join("copy.db");
    backup_database(&db, &copy, &small_steps(), |_, _| {}).expect("backup");

    // The writer waited for the copy, then carried on.
    let reader = Connection::open(&db).expect("reader");
    reader
        .busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    let copied = assert_consistent(&copy);
    let until = Instant::now() + Duration::from_secs(30);
    while max_id(&reader) <= copied {
        assert!(Instant::now() < until, "the writer resumed after the copy");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(writer.stop(), "the writer ran without error");
    assert!(before <= copied);
}

#[test]
fn a_missing_source_is_an_error_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("absent.db");
    let copy = dir.path().join("copy.db");
    let result = backup_database(&missing, &copy, &BackupOptions::default(), |_, _| {});
    assert!(result.is_err());
    assert!(!missing.exists());
    assert!(!copy.exists());
}

fn support_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
