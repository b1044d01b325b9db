//! The snapshot thread: pushes the agent's kilo.db (a consistent online-backup copy) when a
//! turn has ended and its `session.idle` is stored, every interval while the database (or its
//! `-wal`) keeps changing, and once more at the stop. Its watermark (`X-Stasis-Event-Seq`) is
//! the newest seq stasis acknowledged before the copy was taken. An unchanged database is not
//! pushed: not when its files did not change, nor when its copy hashes to what stasis holds,
//! except at a turn's end and at the stop while the stored snapshot's watermark is older than
//! the newest acknowledged seq: the same bytes are then pushed again with the newer watermark,
//! so that a turn's end always leaves a snapshot whose watermark covers it (a periodic push may
//! have stored the turn's database before its `session.idle` was acknowledged).
//! A failed push is logged and tried again at the next trigger. It runs beside forwarding and
//! never holds it up.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime};

use super::Log;
use super::control::Control;
use super::stats::{Stats, add};
use crate::backup::BackupOptions;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::AgentRef;
use crate::snapshot::{self, ChunkedFile, LocalCopy, PushOptions, PushReceipt, TransferMode};

/// The longest a push outside the stop may take, retries included.
const PUSH_TIMEOUT: Duration = Duration::from_secs(120);

/// What the other threads ask of the snapshot thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnapshotCall {
    /// A batch holding `session.idle` was stored.
    TurnEnded,
    /// The sidecar stops: push a last one (if the database changed), then end.
    Final,
}

/// The database files' sizes and times: when equal, nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    db: (u64, Option<SystemTime>),
    wal: Option<(u64, Option<SystemTime>)>,
}

/// Everything the snapshot thread needs.
pub(crate) struct Snapshotter {
    pub(crate) client: Client,
    pub(crate) agent: AgentRef,
    pub(crate) db: PathBuf,
    /// Where the copies are made (the state directory).
    pub(crate) work_dir: PathBuf,
    pub(crate) interval: Duration,
    pub(crate) acked: Arc<AtomicU64>,
    pub(crate) control: Arc<Control>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) log: Log,
    pub(crate) calls: Receiver<SnapshotCall>,
}

/// What the thread remembers between pushes.
#[derive(Default)]
struct Pushed {
    /// The files when the last stored copy was taken.
    fingerprint: Option<Fingerprint>,
    /// The snapshot stasis holds: `None` until asked, `Some(None)` for none.
    held: Option<Option<Held>>,
    /// The last failure logged, so that a lasting one is logged once.
    last_error: Option<String>,
    /// The chunks of the last snapshot pushed by chunks (cleared by a failed push), so the next
    /// push uploads the chunks that differ without asking which the server lacks.
    previous: Option<Arc<ChunkedFile>>,
}

/// A stored snapshot: its bytes' sha256 and its watermark.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    sha256: String,
    watermark: u64,
}

impl Pushed {
    /// Whether the stored snapshot's watermark is `watermark` or newer (unknown: no).
    fn covers(&self, watermark: u64) -> bool {
        matches!(&self.held, Some(Some(held)) if held.watermark >= watermark)
    }
}

/// Whether a push must also bring the stored watermark up to the newest acknowledged seq.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// A turn ended, or the sidecar stops: yes.
    Acked,
    /// A periodic check: only changed bytes matter.
    Changes,
}

impl Snapshotter {
    /// Serves triggers until the final push or until its channel closes.
    pub(crate) fn run(self) {
        let mut pushed = Pushed::default();
        let mut next_tick = Instant::now() + self.interval;
        loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match self.calls.recv_timeout(wait) {
                Ok(SnapshotCall::TurnEnded) => {
                    self.push_if_changed(&mut pushed, "a turn ended", None, Cover::Acked);
                }
                Ok(SnapshotCall::Final) => {
                    let deadline = self.control.stop_deadline();
                    let done =
                        self.push_if_changed(&mut pushed, "stopping", deadline, Cover::Acked);
                    self.control.set_last_snapshot(done);
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    next_tick = Instant::now() + self.interval;
                    self.push_if_changed(&mut pushed, "the database changed", None, Cover::Changes);
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Pushes when the database changed since the last stored copy (or, with [`Cover::Acked`],
    /// when the stored watermark is older than the newest acknowledged seq); answers whether
    /// the database is now stored (pushed now, or unchanged, or absent).
    fn push_if_changed(
        &self,
        pushed: &mut Pushed,
        why: &str,
        deadline: Option<Instant>,
        cover: Cover,
    ) -> bool {
        let Some(fingerprint) = fingerprint(&self.db) else {
            return true;
        };
        let watermark = self.acked.load(Ordering::SeqCst);
        let covered = cover == Cover::Changes || pushed.covers(watermark);
        if pushed.fingerprint.as_ref() == Some(&fingerprint) && covered {
            return true;
        }
        let started = Instant::now();
        match self.push(pushed, watermark, deadline, cover) {
            Ok(receipt) => {
                pushed.fingerprint = Some(fingerprint);
                pushed.last_error = None;
                if let Some(receipt) = receipt {
                    add(&self.stats.snapshots_pushed, 1);
                    let sent = receipt.transfer.map(|t| t.summary()).unwrap_or_default();
                    (self.log)(&format!(
                        "pushed snapshot v{} ({} bytes; {sent}, watermark seq {watermark}) in {} ms: {why}",
                        receipt.version,
                        receipt.size,
                        started.elapsed().as_millis()
                    ));
                }
                true
            }
            Err(error) => {
                add(&self.stats.snapshot_failures, 1);
                self.failed(pushed, error, why);
                false
            }
        }
    }

    fn failed(&self, pushed: &mut Pushed, error: Error, why: &str) {
        if matches!(error.status(), Some(401 | 403)) || error.is_fenced() {
            self.control.fail(error);
            return;
        }
        let text = error.to_string();
        if pushed.last_error.as_deref() != Some(text.as_str()) {
            (self.log)(&format!(
                "snapshot push failed ({why}): {text}; tried again at the next trigger"
            ));
            pushed.last_error = Some(text);
        }
    }

    /// A copy, its hash, and its upload unless stasis already holds those bytes.
    fn push(
        &self,
        pushed: &mut Pushed,
        watermark: u64,
        deadline: Option<Instant>,
        cover: Cover,
    ) -> Result<Option<PushReceipt>> {
        let deadline = deadline.unwrap_or_else(|| Instant::now() + PUSH_TIMEOUT);
        let left = deadline.saturating_duration_since(Instant::now());
        let options = BackupOptions {
            lock_wait: BackupOptions::default().lock_wait.min(left),
            ..BackupOptions::default()
        };
        let mut copy = LocalCopy::take(&self.db, &options, Some(&self.work_dir))?;
        let bytes = copy.bytes()?;
        let image = bytes.image();
        let chunked = image.chunked()?;
        let held = pushed
            .held
            .get_or_insert_with(|| self.server_held(deadline));
        let same_bytes = held.as_ref().is_some_and(|h| h.sha256 == chunked.sha256);
        if same_bytes && (cover == Cover::Changes || pushed.covers(watermark)) {
            return Ok(None);
        }
        let options = PushOptions {
            event_seq: Some(watermark),
            deadline: Some(deadline),
            previous: pushed.previous.take(),
            ..PushOptions::default()
        };
        let receipt = snapshot::upload_image(&self.client, &self.agent, image, &chunked, &options)?;
        if receipt
            .transfer
            .is_some_and(|t| t.mode == TransferMode::Chunks)
        {
            pushed.previous = Some(Arc::new(chunked));
        }
        pushed.held = Some(Some(Held {
            sha256: receipt.sha256.clone(),
            watermark,
        }));
        Ok(Some(receipt))
    }

    /// `HEAD /db-snapshot`: the sha256 and watermark stasis holds (`None` when none, or when
    /// unknown).
    fn server_held(&self, deadline: Instant) -> Option<Held> {
        let url = self.client.config().url(&self.agent.path("/db-snapshot"));
        let request = self
            .client
            .prepare(self.client.agent().head(url), Some(deadline))
            .ok()?;
        let response = request.call().ok()?;
        if !response.status().is_success() {
            return None;
        }
        let sha256 = http::header(&response, "x-stasis-sha256")?.to_ascii_lowercase();
        let watermark = http::header(&response, "x-stasis-event-seq")
            .and_then(|seq| seq.trim().parse().ok())
            .unwrap_or(0);
        Some(Held { sha256, watermark })
    }
}

/// Waits up to `wait` for `db` to exist, then checks that SQLite opens it.
pub(crate) fn check_db(db: &Path, wait: Duration) -> Result<()> {
    let started = Instant::now();
    while !db.is_file() {
        if started.elapsed() >= wait {
            return Err(Error::io(
                format!("the agent's kilo.db {}", db.display()),
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no database file there (is --db right?)",
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let context = || format!("opening the agent's kilo.db {}", db.display());
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = rusqlite::Connection::open_with_flags(db, flags)
        .map_err(|e| Error::sqlite(context(), e))?;
    conn.busy_timeout(Duration::from_secs(5))
        .and_then(|()| {
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .map_err(|e| Error::sqlite(context(), e))?;
    Ok(())
}

/// The database's and its WAL's sizes and times; `None` when there is no database.
fn fingerprint(db: &Path) -> Option<Fingerprint> {
    let stat = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    Some(Fingerprint {
        db: stat(db)?,
        wal: stat(Path::new(&wal)),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn a_write_changes_the_fingerprint_and_a_read_does_not() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("kilo.db");
        assert!(fingerprint(&db).is_none(), "no database yet");
        let conn = rusqlite::Connection::open(&db).expect("open");
        conn.pragma_update(None, "journal_mode", "wal")
            .expect("wal");
        conn.execute_batch("CREATE TABLE t (x)").expect("schema");
        let before = fingerprint(&db).expect("a database");
        let _: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .expect("read");
        assert_eq!(fingerprint(&db), Some(before.clone()));
        conn.execute("INSERT INTO t VALUES (1)", []).expect("write");
        assert_ne!(fingerprint(&db), Some(before));
    }
}
