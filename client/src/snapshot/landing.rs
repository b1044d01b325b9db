//! Putting a pulled database in place: it must pass `PRAGMA quick_check` before it is fsynced
//! and renamed over the target, and SQLite's files beside the old database (which belong to the
//! old content and would corrupt the new) go just before the rename.

use std::io;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::hash_file;
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};

/// How much of a checked database is memory-mapped (SQLite caps it at its compile-time
/// maximum, 2 GiB by default; past that, pages are read).
const MMAP_PRAGMA: &str = "PRAGMA mmap_size = 2147483648";
/// Files SQLite keeps beside a database; stale ones would corrupt a replaced database.
const SIDECARS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Checks the database written into `file`, then commits it over its target. The check and
/// the fsync of the new bytes run at once (neither changes the file); the rename waits for both.
pub fn land(file: AtomicFile, what: &str) -> Result<()> {
    let (checked, synced) = std::thread::scope(|scope| {
        let sync = scope.spawn(|| file.sync());
        let checked = quick_check(file.temp_path(), what);
        let synced = sync.join().unwrap_or_else(|_| {
            Err(Error::io(
                format!("syncing {what}"),
                io::Error::other("the fsync thread panicked"),
            ))
        });
        (checked, synced)
    });
    checked?;
    synced?;
    file.commit_with(remove_sidecars)
}

/// `PRAGMA quick_check` on the file at `path`, opened read-only and immutable (no lock, no
/// `-wal` or `-shm` created beside it) and memory-mapped, so nothing may change it meanwhile:
/// anything but `ok` is an integrity failure.
pub fn quick_check(path: &Path, what: &str) -> Result<()> {
    let context = || format!("checking {what} ({})", path.display());
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(immutable_uri(path), flags)
        .map_err(|e| Error::sqlite(context(), e))?;
    // Pages read through a memory map rather than copied in by read(2): the check walks every
    // page once, and reading them is much of its time.
    conn.execute_batch(MMAP_PRAGMA)
        .map_err(|e| Error::sqlite(context(), e))?;
    let verdict: Result<Vec<String>, rusqlite::Error> = conn
        .prepare("PRAGMA quick_check")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect()
        });
    let lines = match verdict {
        Ok(lines) => lines,
        // "file is not a database" and its kind come as errors, not as rows.
        Err(e) => vec![e.to_string()],
    };
    if lines.len() == 1 && lines.first().is_some_and(|l| l == "ok") {
        return Ok(());
    }
    Err(Error::Integrity {
        what: format!("PRAGMA quick_check of {what}"),
        expected: "ok".into(),
        actual: lines.into_iter().take(5).collect::<Vec<_>>().join("; "),
    })
}

/// `file:<path>?immutable=1`, the path's URI-special characters escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for c in path.to_string_lossy().chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3f"),
            '#' => uri.push_str("%23"),
            c => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The hash and size of `out` when it exists with no pending WAL or journal (then its bytes
/// alone are the database, and a 304 may keep it).
pub fn local_version(out: &Path) -> Result<Option<(String, u64)>> {
    if !out.is_file() {
        return Ok(None);
    }
    for suffix in ["-wal", "-journal"] {
        let mut side = out.as_os_str().to_owned();
        side.push(suffix);
        if std::fs::metadata(&side).is_ok_and(|m| m.len() > 0) {
            return Ok(None);
        }
    }
    hash_file(out).map(Some)
}

/// Removes `-wal`, `-shm` and `-journal` files beside `target`.
fn remove_sidecars(target: &Path) -> Result<()> {
    for suffix in SIDECARS {
        let mut side = target.as_os_str().to_owned();
        side.push(suffix);
        match std::fs::remove_file(&side) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                let context = format!("removing {}", Path::new(&side).display());
                return Err(Error::io(context, e));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn a_sound_database_passes_and_garbage_or_a_cut_one_does_not() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("odd ?#% name.db");
        let conn = Connection::open(&db).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode=wal; CREATE TABLE t (x TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO t SELECT printf('%0200d', i) FROM n;
             PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .expect("fill");
        drop(conn);
        quick_check(&db, "the test database").expect("a sound database");
        assert!(!dir.path().join("odd ?#% name.db-shm").exists());

        let bytes = std::fs::read(&db).expect("read");
        let cut = dir.path().join("cut.db");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
        let error = quick_check(&cut, "a cut database").expect_err("cut");
        assert!(matches!(error, Error::Integrity { .. }), "{error}");

        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 8192]).expect("write");
        assert!(quick_check(&garbage, "garbage").is_err());

        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, b"").expect("write");
        quick_check(&empty, "an empty file").expect("an empty database");
    }
}
