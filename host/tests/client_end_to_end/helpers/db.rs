//! Local databases: rows whose bodies follow from their ids, so a copy can be checked row by row.

use std::path::Path;

use rusqlite::Connection;
use sha2::{Digest, Sha256};

/// Rows in the live database before the writer starts (about 5 MB).
pub const SEED_ROWS: i64 = 8_000;
/// Bytes of each row's body.
pub const ROW_BYTES: usize = 600;

/// The body of row `id`: its id repeated, so any row can be checked on its own.
pub fn row_body(id: i64) -> String {
    format!("{id:010}:").repeat(ROW_BYTES / 11)
}

/// A database of rows `1..=rows` in `journal_mode`.
pub fn create_db(path: &Path, rows: i64, journal_mode: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
    let mut conn = Connection::open(path).expect("open");
    conn.pragma_update(None, "journal_mode", journal_mode)
        .expect("journal mode");
    let tx = conn.transaction().expect("begin");
    tx.execute_batch("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .expect("schema");
    for id in 1..=rows {
        tx.execute(
            "INSERT INTO rows (id, body) VALUES (?1, ?2)",
            rusqlite::params![id, row_body(id)],
        )
        .expect("insert");
    }
    tx.commit().expect("commit");
}

/// Rows for a database of about `bytes`.
pub fn rows_for(bytes: u64) -> i64 {
    i64::try_from(bytes / (ROW_BYTES as u64 + 60)).expect("rows")
}

/// Appends `more` rows to a database (an agent that kept working).
pub fn append_rows(path: &Path, more: i64) {
    let conn = Connection::open(path).expect("open");
    let max = max_id(&conn);
    for id in max + 1..=max + more {
        conn.execute(
            "INSERT INTO rows (id, body) VALUES (?1, ?2)",
            rusqlite::params![id, row_body(id)],
        )
        .expect("insert");
    }
}

pub fn max_id(conn: &Connection) -> i64 {
    conn.query_row("SELECT coalesce(max(id), 0) FROM rows", [], |r| r.get(0))
        .expect("max id")
}

/// Checks a database read back from the server and answers its row count: integrity ok, rows
/// `1..=n` with no gap, each row's body the one its id implies.
pub fn assert_consistent_prefix(path: &Path) -> i64 {
    let conn = Connection::open(path).expect("the database opens with SQLite");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok", "{}", path.display());
    let mut statement = conn
        .prepare("SELECT id, body FROM rows ORDER BY id")
        .expect("select");
    let rows = statement
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .expect("query");
    let mut n = 0;
    for row in rows {
        let (id, body) = row.expect("row");
        n += 1;
        assert_eq!(id, n, "rows 1..=n with no gap");
        assert!(body == row_body(id), "row {id} holds its own body");
    }
    n
}

pub fn sha256_file(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).expect("read")))
}

/// The names in a directory, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
