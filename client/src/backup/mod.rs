//! A consistent copy of a live SQLite database, taken with SQLite's online backup API while
//! other processes keep writing to it.
//!
//! SQLite restarts a backup whenever another connection commits between two steps, so a copy
//! taken in steps of a busy database may never finish. Instead the source connection opens a
//! read transaction first and holds it across every step: all pages then come from one
//! snapshot, the copy is the database as of one commit, and no restart can happen. In WAL mode
//! (kilo.db's) writers carry on meanwhile; in rollback-journal mode a writer waits for the copy
//! to finish (its busy timeout should exceed the copy time: tens of milliseconds for 25 MiB).
//! Lock contention (`SQLITE_BUSY`, `SQLITE_LOCKED`) is retried until [`BackupOptions::lock_wait`].

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::error::{Error, Result};

mod memory;

pub use memory::{MEMORY_COPY_MAX_BYTES, MemoryCopy, backup_to_memory};

/// The longest a single SQLite call waits for a lock before the loop looks at the time.
const MAX_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How a backup proceeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupOptions {
    /// Pages copied per step (progress is reported between steps).
    pub pages_per_step: u16,
    /// Pause after each step (0 copies as fast as possible).
    pub pause_between_steps: Duration,
    /// How long lock contention is waited out before the backup fails.
    pub lock_wait: Duration,
}

impl Default for BackupOptions {
    /// 256 pages a step (1 MiB at SQLite's default 4 KiB page), no pause, 30 s of lock waits.
    fn default() -> Self {
        BackupOptions {
            pages_per_step: 256,
            pause_between_steps: Duration::ZERO,
            lock_wait: Duration::from_secs(30),
        }
    }
}

/// What a backup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupStats {
    /// Pages in the copy.
    pub pages: u64,
    /// Steps taken.
    pub steps: u32,
    /// Steps that met a lock and were retried.
    pub lock_retries: u32,
}

/// Copies the database at `source` into a new database at `dest` (which must not exist or be
/// open elsewhere), calling `on_progress(pages_done, pages_total)` between steps.
///
/// The source must exist: it is opened read-write (so that a WAL left by a crashed writer can
/// be recovered) but never created, and only read. The copy is written without a journal or
/// fsync, and on failure `dest` may hold a partial copy: write it to a temporary place, as
/// [`crate::snapshot::push`] does.
pub fn backup_database(
    source: &Path,
    dest: &Path,
    options: &BackupOptions,
    on_progress: impl FnMut(u64, u64),
) -> Result<BackupStats> {
    // Checked first, so that a missing source creates no copy either.
    require_source(source)?;
    let dest_context = || format!("writing the copy {}", dest.display());
    let mut dst = Connection::open(dest).map_err(|e| Error::sqlite(dest_context(), e))?;
    let stats = backup_into(source, &mut dst, u64::MAX, options, on_progress)?;
    dst.close()
        .map_err(|(_, e)| Error::sqlite(dest_context(), e))?;
    stats.ok_or_else(|| {
        Error::io(
            dest_context(),
            std::io::Error::other("no size limit, yet the copy was refused"),
        )
    })
}

/// Copies the database at `source` into `dst`, an open destination nothing else uses, as
/// [`backup_database`] describes; `None` (nothing copied) when the database, as of the pinned
/// snapshot, is larger than `max_bytes`.
fn backup_into(
    source: &Path,
    dst: &mut Connection,
    max_bytes: u64,
    options: &BackupOptions,
    mut on_progress: impl FnMut(u64, u64),
) -> Result<Option<BackupStats>> {
    let src_context = || format!("reading {}", source.display());
    require_source(source)?;
    let src = Connection::open_with_flags(
        source,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| Error::sqlite(src_context(), e))?;
    let started = Instant::now();
    pin_snapshot(&src, options, started).map_err(|e| Error::sqlite(src_context(), e))?;
    let size = database_bytes(&src).map_err(|e| Error::sqlite(src_context(), e))?;
    let stats = if size > max_bytes {
        None
    } else {
        let dest_context = "writing the copy";
        // The copy is temporary, read back at once and never the durable state: no journal
        // and no fsync for it.
        dst.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            .map_err(|e| Error::sqlite(dest_context, e))?;
        let stats = copy_pages(&src, dst, options, &mut on_progress)
            .map_err(|e| Error::sqlite(format!("backing up {}", source.display()), e))?;
        Some(stats)
    };

    // Ends the read transaction; nothing was written through this connection.
    src.execute_batch("ROLLBACK")
        .map_err(|e| Error::sqlite(src_context(), e))?;
    src.close()
        .map_err(|(_, e)| Error::sqlite(src_context(), e))?;
    Ok(stats)
}

/// An error unless `source` is a file (a database is never created by a copy of it).
fn require_source(source: &Path) -> Result<()> {
    if source.is_file() {
        return Ok(());
    }
    Err(Error::io(
        format!("reading {}", source.display()),
        std::io::Error::new(std::io::ErrorKind::NotFound, "no database file there"),
    ))
}

/// The database's own bytes (pages × page size) as of the open read transaction.
fn database_bytes(src: &Connection) -> rusqlite::Result<u64> {
    let pages: i64 = src.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    let page: i64 = src.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    Ok(u64::try_from(pages.saturating_mul(page)).unwrap_or(u64::MAX))
}

/// Opens a read transaction on `src` and reads from it, which fixes the snapshot every later
/// backup step reads.
fn pin_snapshot(
    src: &Connection,
    options: &BackupOptions,
    started: Instant,
) -> rusqlite::Result<()> {
    loop {
        // Each attempt waits for the lock no longer than what is left of `lock_wait`.
        let left = options.lock_wait.saturating_sub(started.elapsed());
        src.busy_timeout(left.min(MAX_BUSY_TIMEOUT))?;
        let attempt = src.execute_batch("BEGIN DEFERRED").and_then(|()| {
            src.query_row("SELECT count(*) FROM sqlite_schema", [], |row| {
                row.get::<_, i64>(0)
            })
        });
        match attempt {
            Ok(_) => return Ok(()),
            Err(e) if is_contention(&e) && started.elapsed() < options.lock_wait => {
                // A failed first read may leave the BEGIN open; start over cleanly.
                if !src.is_autocommit() {
                    src.execute_batch("ROLLBACK")?;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

fn copy_pages(
    src: &Connection,
    dst: &mut Connection,
    options: &BackupOptions,
    on_progress: &mut impl FnMut(u64, u64),
) -> rusqlite::Result<BackupStats> {
    let backup = Backup::new(src, dst)?;
    let mut stats = BackupStats {
        pages: 0,
        steps: 0,
        lock_retries: 0,
    };
    let pages = i32::from(options.pages_per_step.max(1));
    let mut locked_since: Option<Instant> = None;
    loop {
        let step = backup.step(pages)?;
        stats.steps += 1;
        let progress = backup.progress();
        let total = u64::try_from(progress.pagecount).unwrap_or(0);
        let remaining = u64::try_from(progress.remaining).unwrap_or(0);
        if matches!(step, StepResult::Done | StepResult::More) {
            locked_since = None;
        }
        match step {
            StepResult::Done => {
                stats.pages = total;
                on_progress(total, total);
                return Ok(stats);
            }
            StepResult::More => {
                on_progress(total.saturating_sub(remaining), total);
                if !options.pause_between_steps.is_zero() {
                    std::thread::sleep(options.pause_between_steps);
                }
            }
            // Busy, Locked, and anything a later rusqlite may add: wait and step again.
            _ => {
                stats.lock_retries += 1;
                let since = *locked_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= options.lock_wait {
                    return Err(rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                        Some(format!(
                            "the database stayed locked for {:?}",
                            options.lock_wait
                        )),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

fn is_contention(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}
