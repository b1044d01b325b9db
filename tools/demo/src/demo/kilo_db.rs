//! Synthetic `kilo.db` files: real SQLite databases shaped like an agent
//! SDK's local store (sessions, messages, parts), grown to a target size with
//! tool-output blobs. The same seed always gives the same rows.

use super::rng::Rng;
use anyhow::{Context, ensure};
use rusqlite::{Connection, params, types::ValueRef};
use sha2::{Digest, Sha256};
use std::path::Path;

const SCHEMA: &str = "
    PRAGMA journal_mode = WAL;
    CREATE TABLE session (
        id TEXT PRIMARY KEY, project_id TEXT NOT NULL, title TEXT NOT NULL,
        time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
    CREATE TABLE message (
        id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES session(id),
        role TEXT NOT NULL, model TEXT, tokens_input INTEGER, tokens_output INTEGER,
        time_created INTEGER NOT NULL);
    CREATE TABLE part (
        id TEXT PRIMARY KEY, message_id TEXT NOT NULL REFERENCES message(id),
        type TEXT NOT NULL, text TEXT, output BLOB, time_created INTEGER NOT NULL);
    CREATE INDEX message_session ON message(session_id, time_created);
    CREATE INDEX part_message ON part(message_id);
";

/// Messages per session before a new session starts.
const MESSAGES_PER_SESSION: u64 = 40;
/// The size is measured every this many messages while growing.
const MEASURE_EVERY: u64 = 4;
/// A fixed clock, so that rows do not depend on when the demo runs.
const EPOCH_MS: i64 = 1_767_225_600_000;

const TITLES: &[&str] = &[
    "Invoice rounding fix (gt-21)",
    "Webhook retries (gt-19)",
    "Flaky test triage",
    "Convoy cv-billing planning",
    "Refinery merge queue",
    "Dependency bump: tokio",
    "Postgres index review",
    "Release notes draft",
];
const SAYINGS: &[&str] = &[
    "Running the test suite for the billing rig.",
    "The rounding error comes from converting cents to floats twice.",
    "I opened a branch and wrote a failing test first.",
    "The merge queue is clear; refinery picked up the change.",
    "Two retries with backoff are enough for the webhook sender.",
    "I updated the migration and reran it against a copy of production.",
    "Tests pass locally; waiting for CI.",
    "The flaky test depends on wall-clock time; I froze the clock.",
];
const TOOLS: &[&str] = &["bash", "read", "edit", "grep", "webfetch"];

/// What [`create`] or [`keep_working`] left in a database.
pub struct Contents {
    /// The file's size in bytes.
    pub size: u64,
    /// Rows of each table.
    pub sessions: u64,
    /// Rows of `message`.
    pub messages: u64,
    /// Rows of `part`.
    pub parts: u64,
}

/// Creates a new database at `path` holding at least `target_bytes`.
pub fn create(path: &Path, target_bytes: u64, seed: u64) -> anyhow::Result<Contents> {
    ensure!(!path.exists(), "{} exists already", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut conn = open(path)?;
    conn.execute_batch(SCHEMA)
        .context("creating the kilo.db tables")?;
    let mut writer = Writer::new(seed);
    let tx = conn.transaction()?;
    while database_size(&tx)? < target_bytes {
        for _ in 0..MEASURE_EVERY {
            writer.message(&tx)?;
        }
    }
    tx.commit()?;
    contents(conn, path)
}

/// Appends `messages` more messages, as an agent still at work does.
pub fn keep_working(path: &Path, seed: u64, messages: u64) -> anyhow::Result<Contents> {
    let mut conn = open(path)?;
    let existing = unsigned(conn.query_row("SELECT count(*) FROM message", [], |r| r.get(0))?);
    let mut writer = Writer::resume(seed, existing);
    let tx = conn.transaction()?;
    for _ in 0..messages {
        writer.message(&tx)?;
    }
    tx.commit()?;
    contents(conn, path)
}

/// A sha256 over every row of every table, in order: equal digests mean the
/// same data, whatever the file's page layout.
pub fn content_digest(path: &Path) -> anyhow::Result<String> {
    let conn = open(path)?;
    let mut tables = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY name",
    )?;
    let names = tables
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut hasher = Sha256::new();
    for name in names {
        hasher.update(name.as_bytes());
        let mut rows = conn.prepare(&format!("SELECT * FROM \"{name}\" ORDER BY rowid"))?;
        let columns = rows.column_count();
        let mut cursor = rows.query([])?;
        while let Some(row) = cursor.next()? {
            for column in 0..columns {
                hash_value(&mut hasher, row.get_ref(column)?);
            }
        }
    }
    Ok(hex::encode(hasher.finalize()))
}

/// `PRAGMA integrity_check`'s answer (`ok` for a sound database).
pub fn integrity_check(path: &Path) -> anyhow::Result<String> {
    let conn = open(path)?;
    let answer = conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))?;
    Ok(answer)
}

fn open(path: &Path) -> anyhow::Result<Connection> {
    let conn = Connection::open(path)
        .with_context(|| format!("opening {} with SQLite", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(conn)
}

fn database_size(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |row| row.get(0).map(unsigned),
    )
}

/// SQLite integers are signed; counts and sizes never are negative.
fn unsigned(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Counts the rows, then closes the connection, which checkpoints the WAL
/// into the file, so that the file's size is the database's.
fn contents(conn: Connection, path: &Path) -> anyhow::Result<Contents> {
    let count = |table: &str| -> rusqlite::Result<u64> {
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
            r.get(0).map(unsigned)
        })
    };
    let (sessions, messages, parts) = (count("session")?, count("message")?, count("part")?);
    conn.close().map_err(|(_, err)| err)?;
    let size = std::fs::metadata(path)
        .with_context(|| format!("reading the size of {}", path.display()))?
        .len();
    Ok(Contents {
        size,
        sessions,
        messages,
        parts,
    })
}

fn hash_value(hasher: &mut Sha256, value: ValueRef<'_>) {
    match value {
        ValueRef::Null => hasher.update(b"n"),
        ValueRef::Integer(i) => {
            hasher.update(b"i");
            hasher.update(i.to_le_bytes());
        }
        ValueRef::Real(f) => {
            hasher.update(b"r");
            hasher.update(f.to_le_bytes());
        }
        ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
            hasher.update(b"b");
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
    }
}

/// Writes messages one after another: a user ask, then an assistant answer
/// with a text part and a tool part whose output blob carries the bulk.
struct Writer {
    rng: Rng,
    next: u64,
}

impl Writer {
    fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
            next: 0,
        }
    }

    /// Continues after `existing` messages, on a stream of its own.
    fn resume(seed: u64, existing: u64) -> Self {
        Self {
            rng: Rng::new(seed ^ existing.wrapping_mul(0x9E37_79B9)),
            next: existing,
        }
    }

    fn message(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        let n = self.next;
        self.next += 1;
        let session = format!("ses_{:04}", n / MESSAGES_PER_SESSION);
        let at = EPOCH_MS + i64::try_from(n).unwrap_or(i64::MAX) * 7_000;
        if n.is_multiple_of(MESSAGES_PER_SESSION) {
            conn.execute(
                "INSERT OR IGNORE INTO session VALUES (?1, 'prj_town', ?2, ?3, ?3)",
                params![session, self.rng.pick(TITLES), at],
            )?;
        }
        conn.execute(
            "UPDATE session SET time_updated = ?2 WHERE id = ?1",
            params![session, at],
        )?;
        let id = format!("msg_{n:06}");
        let (role, model) = if n.is_multiple_of(2) {
            ("user", None)
        } else {
            ("assistant", Some("claude-sonnet-4"))
        };
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                id,
                session,
                role,
                model,
                self.rng.between(200, 9_000) as i64,
                self.rng.between(20, 1_500) as i64,
                at
            ],
        )?;
        let text = self.rng.pick(SAYINGS).to_string();
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, 'text', ?3, NULL, ?4)",
            params![format!("{id}_p0"), id, text, at],
        )?;
        if role == "assistant" {
            let len = usize::try_from(self.rng.between(8 * 1024, 40 * 1024)).unwrap_or(8 * 1024);
            conn.execute(
                "INSERT INTO part VALUES (?1, ?2, 'tool', ?3, ?4, ?5)",
                params![
                    format!("{id}_p1"),
                    id,
                    self.rng.pick(TOOLS),
                    self.rng.bytes(len),
                    at + 1_500
                ],
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_reaches_its_target_and_checks_ok() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("kilo.db");
        let built = create(&path, 300_000, 1)?;
        assert!(
            built.size >= 300_000 && built.size < 400_000,
            "{}",
            built.size
        );
        assert_eq!(integrity_check(&path)?, "ok");
        let grown = keep_working(&path, 1, 4)?;
        assert_eq!(grown.messages, built.messages + 4);
        Ok(())
    }

    #[test]
    fn the_same_seed_gives_the_same_rows() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (a, b, c) = (
            dir.path().join("a.db"),
            dir.path().join("b.db"),
            dir.path().join("c.db"),
        );
        create(&a, 100_000, 5)?;
        create(&b, 100_000, 5)?;
        create(&c, 100_000, 6)?;
        assert_eq!(content_digest(&a)?, content_digest(&b)?);
        assert_ne!(content_digest(&a)?, content_digest(&c)?);
        Ok(())
    }
}
