//! A writer in another process, as kilo is beside `snapshot push`: the test
//! binary re-runs itself with only its `writer_process` test selected and an
//! environment variable naming the database, and inserts batch after batch
//! until a stop file appears. Shared by this crate's tests and the host's
//! end-to-end client test (included there by path).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction, TransactionBehavior};

/// Runs `insert_batch` in one immediate transaction after another until the
/// stop file of `db` appears.
pub fn write_until_stopped(db: &Path, mut insert_batch: impl FnMut(&Transaction<'_>)) {
    let stop = stop_file(db);
    let mut conn = Connection::open(db).expect("writer opens the database");
    conn.busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    while !stop.exists() {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .expect("begin");
        insert_batch(&tx);
        tx.commit().expect("commit");
    }
}

fn stop_file(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".stop");
    PathBuf::from(name)
}

/// The writer process, killed if dropped before [`Writer::stop`].
pub struct Writer {
    child: Child,
    db: PathBuf,
}

impl Writer {
    /// Re-runs this test binary's `writer_process` test with `env` naming `db`.
    pub fn start(db: &Path, env: &str) -> Writer {
        let child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "writer_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(env, db)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the writer");
        Writer {
            child,
            db: db.to_owned(),
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
