//! A consistent copy held in memory: the same online backup (one read transaction pinned across
//! every step), into a private database of SQLite's `memdb` VFS, whose pages are one contiguous
//! buffer that `sqlite3_serialize` hands out without copying. A push then hashes and uploads the
//! copy from memory instead of writing a temporary file and reading it back. Databases above
//! [`MEMORY_COPY_MAX_BYTES`] are not copied this way, so memory stays bounded: the caller falls
//! back to [`super::backup_database`] into a file.

use std::ops::Deref;
use std::path::Path;

use rusqlite::{Connection, MAIN_DB, OpenFlags};

use super::{BackupOptions, backup_into};
use crate::error::{Error, Result};

/// The largest database copied into memory: 256 MiB.
pub const MEMORY_COPY_MAX_BYTES: u64 = 256 << 20;

/// A private in-memory database (its name lacks the leading `/` that would share it).
const MEMDB_URI: &str = "file:stasis-copy?vfs=memdb";

/// A consistent copy of a database, in memory.
#[derive(Debug)]
pub struct MemoryCopy {
    conn: Connection,
}

impl MemoryCopy {
    /// The copy's bytes: the database file it would be, byte for byte.
    pub fn bytes(&mut self) -> Result<impl Deref<Target = [u8]> + '_> {
        self.conn
            .serialize(MAIN_DB)
            .map_err(|e| Error::sqlite("reading the copy in memory", e))
    }
}

/// Copies the live database at `source` into memory as [`super::backup_database`] copies it
/// into a file; `None` when it holds more than `max_bytes` (then nothing was copied).
pub fn backup_to_memory(
    source: &Path,
    options: &BackupOptions,
    max_bytes: u64,
) -> Result<Option<MemoryCopy>> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(MEMDB_URI, flags)
        .map_err(|e| Error::sqlite("opening a database in memory", e))?;
    let copied = backup_into(source, &mut conn, max_bytes, options, |_, _| {})?;
    Ok(copied.map(|_| MemoryCopy { conn }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;
    use crate::backup::backup_database;

    fn live_db(path: &Path) -> Connection {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode=wal; CREATE TABLE t (x TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
             INSERT INTO t SELECT printf('%0300d', i) FROM n;",
        )
        .expect("fill");
        conn
    }

    #[test]
    fn the_copy_in_memory_is_the_file_copy_byte_for_byte_with_the_wal_applied() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("live.db");
        let writer = live_db(&db);
        writer
            .execute("UPDATE t SET x = 'changed' WHERE rowid = 7", [])
            .expect("a change left in the WAL");
        let mut copy = backup_to_memory(&db, &BackupOptions::default(), u64::MAX)
            .expect("copy")
            .expect("under the limit");
        let file = dir.path().join("copy.db");
        backup_database(&db, &file, &BackupOptions::default(), |_, _| {}).expect("file copy");
        let in_memory = copy.bytes().expect("bytes").to_vec();
        assert_eq!(in_memory, std::fs::read(&file).expect("read"));

        let back = dir.path().join("back.db");
        std::fs::write(&back, &in_memory).expect("write");
        let reopened = Connection::open(&back).expect("open");
        let x: String = reopened
            .query_row("SELECT x FROM t WHERE rowid = 7", [], |r| r.get(0))
            .expect("row");
        assert_eq!(x, "changed");
    }

    #[test]
    fn a_database_over_the_limit_is_not_copied() {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("live.db");
        let _writer = live_db(&db);
        let size = std::fs::metadata(&db).expect("meta").len();
        let refused = backup_to_memory(&db, &BackupOptions::default(), 4096).expect("no error");
        assert!(refused.is_none(), "{size} bytes over a 4 KiB limit");
    }
}
