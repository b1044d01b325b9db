//! The domain's [`SqlStore`] port over a local SQLite connection.
//!
//! The host uses it to answer its components' `sql` import; the domain's own
//! tests use it so that the rules are checked against real SQLite. Statements
//! go through rusqlite's prepared-statement cache: the rules issue the same
//! few statements over and over. The host's objects also take their
//! transactions, savepoints and durable creation from here.

pub use rusqlite::types::ValueRef;
use rusqlite::{Connection, ToSql};
use stasis_domain::sql::{Row, SqlStore, SqlValue, StorageError};
use std::path::Path;

/// How hard a commit works to survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync the WAL before a commit returns: survives power loss.
    Fsync,
    /// Hand the WAL to the OS before a commit returns: survives a killed
    /// process, not a power cut.
    Os,
}

/// One object's SQLite database.
pub struct SqliteStore {
    conn: Connection,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path` in WAL mode.
    pub fn open(path: &Path, durability: Durability) -> Result<Self, StorageError> {
        let conn = Connection::open(path).map_err(storage_error)?;
        Self::configure(conn, durability)
    }

    /// A private in-memory database, for tests.
    pub fn in_memory() -> Result<Self, StorageError> {
        let conn = Connection::open_in_memory().map_err(storage_error)?;
        Self::configure(conn, Durability::Os)
    }

    fn configure(conn: Connection, durability: Durability) -> Result<Self, StorageError> {
        let synchronous = match durability {
            Durability::Fsync => "FULL",
            Durability::Os => "NORMAL",
        };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = {synchronous};
             PRAGMA foreign_keys = ON;
             PRAGMA busy_timeout = 5000;"
        ))
        .map_err(storage_error)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Self { conn })
    }

    /// The underlying connection, for transactions the adapter owns.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Opens the database at `path` and runs `migrate` in one transaction.
    /// A new file's folders, and the file itself, are created and fsynced
    /// into their parents, so that a new database survives a power cut as
    /// well as its first commit does.
    pub fn open_durably<E: From<StorageError>>(
        path: &Path,
        durability: Durability,
        migrate: impl FnOnce(&Self) -> Result<(), E>,
    ) -> Result<Self, E> {
        let io = |err: std::io::Error| StorageError::Io(format!("{}: {err}", path.display()));
        let is_new = !path.exists();
        let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
        if is_new && let Some(dir) = dir {
            create_dir_durably(dir).map_err(io)?;
        }
        let db = Self::open(path, durability)?;
        db.begin()?;
        let migrated = migrate(&db);
        db.finish(migrated)?;
        if is_new && let Some(dir) = dir {
            std::fs::File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(io)?;
        }
        Ok(db)
    }

    /// Starts a write transaction.
    pub fn begin(&self) -> Result<(), StorageError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(storage_error)
    }

    /// Commits when `outcome` is Ok (where the fsync happens), rolls back
    /// otherwise or when the commit fails.
    pub fn finish<T, E: From<StorageError>>(&self, outcome: Result<T, E>) -> Result<T, E> {
        let committed = outcome.and_then(|value| {
            self.conn
                .execute_batch("COMMIT")
                .map_err(|err| E::from(storage_error(err)))
                .map(|()| value)
        });
        if committed.is_err() && !self.conn.is_autocommit() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        committed
    }

    /// Opens a savepoint inside the open transaction, so that one call can
    /// be rolled back alone; close it with [`Savepoint::close`].
    pub fn savepoint(&self) -> Result<Savepoint, StorageError> {
        self.conn
            .execute_batch("SAVEPOINT call")
            .map_err(storage_error)?;
        Ok(Savepoint(()))
    }
}

/// A savepoint opened by [`SqliteStore::savepoint`].
#[must_use = "a savepoint must be closed"]
pub struct Savepoint(());

impl Savepoint {
    /// Keeps the savepoint's writes (`keep`) or rolls them back.
    pub fn close(self, db: &SqliteStore, keep: bool) -> Result<(), StorageError> {
        let statement = if keep {
            "RELEASE call"
        } else {
            "ROLLBACK TO call; RELEASE call"
        };
        db.conn.execute_batch(statement).map_err(storage_error)
    }
}

/// Creates `dir` and any missing parents, then fsyncs each new folder and
/// the existing one above them, so that the new entries are durable.
fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    let mut to_sync = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        to_sync.push(path.to_path_buf());
        if path.exists() {
            break;
        }
        current = path.parent().filter(|p| !p.as_os_str().is_empty());
    }
    std::fs::create_dir_all(dir)?;
    for path in to_sync {
        std::fs::File::open(&path)?.sync_all()?;
    }
    Ok(())
}

impl SqliteStore {
    /// Runs a statement and builds each column value with `convert`, so an
    /// adapter with its own value type (the host's WIT values) skips the
    /// domain's row type and its allocations.
    pub fn execute_as<V>(
        &self,
        statement: &str,
        params: &[SqlValue],
        mut convert: impl FnMut(ValueRef<'_>) -> V,
    ) -> Result<Vec<Vec<V>>, StorageError> {
        let mut prepared = self.conn.prepare_cached(statement).map_err(storage_error)?;
        let columns = prepared.column_count();
        let mut rows = prepared
            .query(rusqlite::params_from_iter(params.iter().map(Bind)))
            .map_err(storage_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(storage_error)? {
            let mut values = Vec::with_capacity(columns);
            for index in 0..columns {
                values.push(convert(row.get_ref(index).map_err(storage_error)?));
            }
            out.push(values);
        }
        Ok(out)
    }
}

impl SqlStore for SqliteStore {
    fn execute(&self, statement: &str, params: Vec<SqlValue>) -> Result<Vec<Row>, StorageError> {
        self.execute_as(statement, &params, value_from)
    }
}

/// Binds a domain value as a rusqlite parameter without copying it.
struct Bind<'a>(&'a SqlValue);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::ToSqlOutput::Borrowed;
        Ok(match self.0 {
            SqlValue::Null => Borrowed(ValueRef::Null),
            SqlValue::Integer(v) => Borrowed(ValueRef::Integer(*v)),
            SqlValue::Real(v) => Borrowed(ValueRef::Real(*v)),
            SqlValue::Text(v) => Borrowed(ValueRef::Text(v.as_bytes())),
            SqlValue::Blob(v) => Borrowed(ValueRef::Blob(v)),
        })
    }
}

/// A SQLite value as the domain's value.
pub fn value_from(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(v) => SqlValue::Integer(v),
        ValueRef::Real(v) => SqlValue::Real(v),
        ValueRef::Text(v) => SqlValue::Text(text_from(v)),
        ValueRef::Blob(v) => SqlValue::Blob(v.to_vec()),
    }
}

/// SQLite text as a String. The rules write UTF-8; lossy decoding only
/// guards against a file edited by hand.
pub fn text_from(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Sorts rusqlite's errors into the port's kinds.
pub fn storage_error(err: rusqlite::Error) -> StorageError {
    use rusqlite::ffi::ErrorCode;
    match &err {
        rusqlite::Error::SqliteFailure(code, _) => match code.code {
            ErrorCode::ConstraintViolation => StorageError::ConstraintViolation(err.to_string()),
            ErrorCode::TooBig => StorageError::TooBig(err.to_string()),
            _ => StorageError::Io(err.to_string()),
        },
        rusqlite::Error::SqlInputError { .. } | rusqlite::Error::InvalidParameterCount(..) => {
            StorageError::InvalidStatement(err.to_string())
        }
        _ => StorageError::Io(err.to_string()),
    }
}
