//! The writer process: this test binary re-run to insert rows until told to stop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, TransactionBehavior};

use super::db::{max_id, row_body};

/// Set in the writer process: the database it writes to.
pub const WRITER_ENV: &str = "STASIS_E2E_WRITER_DB";
/// Rows per writer transaction.
pub const BATCH: i64 = 5;

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
