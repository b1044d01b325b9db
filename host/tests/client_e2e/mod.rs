//! What client_end_to_end.rs builds on: local SQLite databases whose rows can be checked one
//! by one, the writer process that keeps inserting into one, and requests to the server.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};
use serde_json::Value;
use sha2::{Digest, Sha256};
use stasis_client::{AgentRef, Client, Config, RetryPolicy};

use crate::support::{self, Server, admin, agent};

/// Set in the writer process: the database it writes to.
pub const WRITER_ENV: &str = "STASIS_E2E_WRITER_DB";
/// Rows per writer transaction.
pub const BATCH: i64 = 5;
/// Rows in the live database before the writer starts (about 5 MB).
pub const SEED_ROWS: i64 = 8_000;
/// Bytes of each row's body.
pub const ROW_BYTES: usize = 600;

// ---------------------------------------------------------------------------------------------
// Local databases
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// The writer process
// ---------------------------------------------------------------------------------------------

pub fn write_until_stopped(path: &Path) {
    let stop = stop_file(path);
    let mut conn = Connection::open(path).expect("writer opens the database");
    conn.busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    while !stop.exists() {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        let next = max_id(&tx) + 1;
        for id in next..next + BATCH {
            tx.execute(
                "INSERT INTO rows (id, body) VALUES (?1, ?2)",
                rusqlite::params![id, row_body(id)],
            )
            .expect("insert");
        }
        tx.commit().expect("commit");
    }
}

fn stop_file(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".stop");
    PathBuf::from(name)
}

/// Another process inserting rows into a database until stopped.
pub struct Writer {
    child: Child,
    db: PathBuf,
}

impl Writer {
    pub fn start(db: &Path) -> Writer {
        let child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "writer_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(WRITER_ENV, db)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the writer");
        Writer {
            child,
            db: db.to_owned(),
        }
    }

    /// Waits until the writer has committed `batches` transactions past `from`.
    pub fn wait_for(&self, reader: &Connection, from: i64, batches: i64) {
        let until = Instant::now() + Duration::from_secs(30);
        while max_id(reader) < from + batches * BATCH {
            assert!(Instant::now() < until, "the writer process never wrote");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the writer between transactions; answers whether it exited cleanly.
    pub fn stop(mut self) -> bool {
        std::fs::write(stop_file(&self.db), b"").expect("stop file");
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// `stasis serve` on `data_dir`, its components compiled once per run.
pub fn start_server(data_dir: &Path) -> Server {
    support::with_compiled_components(data_dir);
    Server::start(data_dir, &[])
}

pub fn admin_token() -> String {
    admin()
        .strip_prefix("Bearer ")
        .expect("a bearer value")
        .to_owned()
}

/// A client of `server` with the admin token and the default retry policy.
pub fn client(server: &Server) -> Client {
    Client::new(Config::new(&server.base, Some(admin_token())).expect("config"))
}

/// A client that gives up quickly (for the failures that are retried).
pub fn impatient_client(server: &Server) -> Client {
    client(server).with_policy(RetryPolicy {
        max_attempts: 3,
        max_elapsed: Duration::from_secs(10),
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    })
}

/// A JSON request as admin: the status and the JSON answer (`null` when empty).
pub fn call(server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let client = agent();
    let sent = match (method, body) {
        ("GET", None) => client.get(&url).header("Authorization", admin()).call(),
        ("PUT", Some(body)) => client
            .put(&url)
            .header("Authorization", admin())
            .send_json(body),
        ("POST", Some(body)) => client
            .post(&url)
            .header("Authorization", admin())
            .send_json(body),
        _ => panic!("no such call: {method} with {body:?}"),
    };
    let mut response = sent.expect("the server answers");
    let text = response.body_mut().read_to_string().expect("a text answer");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("a JSON answer")
    };
    (response.status().as_u16(), value)
}

/// `HEAD /db-snapshot`: the status and `X-Stasis-Sha256`.
pub fn head_snapshot(server: &Server, who: &AgentRef) -> (u16, Option<String>) {
    let url = format!("{}{}", server.base, who.path("/db-snapshot"));
    let response = agent()
        .head(&url)
        .header("Authorization", admin())
        .call()
        .expect("the server answers");
    let sha = response
        .headers()
        .get("x-stasis-sha256")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.status().as_u16(), sha)
}
