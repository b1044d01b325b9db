//! `snapshot push --whole-file` end to end: a live SQLite database (WAL mode,
//! open, no writer running) copied with SQLite's backup API, hashed and
//! uploaded whole by `stasis-client` (the delta push is [`super::delta`]). Its baseline, a raw PUT of as many bytes, is
//! [`snapshot::puts`](super::snapshot::puts).

use super::{Bounds, container_client};
use crate::{client::Endpoint, stats::Latency, workloads::snapshot::random_bytes};
use anyhow::{Context, Result, bail};
use rusqlite::Connection;
use sha2::{Digest, Sha256};
use stasis_client::{
    AgentRef, Client,
    backup::BackupOptions,
    snapshot::{self, Image, LocalCopy, PushOptions},
};
use std::{
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// The size of the live database: about 25 MB (the issue's one-turn figure).
pub const DB_BYTES: u64 = 25_000_000;
/// How long one push may take, retries included.
const PUSH_DEADLINE: Duration = Duration::from_secs(60);

/// A database an agent has open: the connection stays open (and idle) for
/// as long as this lives.
pub struct LiveDb {
    /// Its path.
    pub path: PathBuf,
    /// Its size on disk, WAL included.
    pub bytes: u64,
    conn: Connection,
}

impl std::fmt::Debug for LiveDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveDb")
            .field("path", &self.path)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

/// Creates `dir/kilo.db` in WAL mode with sessions, messages and parts rows
/// until the database (its pages) holds about `target` bytes, and leaves it
/// open.
pub fn live_database(dir: &Path, target: u64) -> Result<LiveDb> {
    let path = dir.join("kilo.db");
    let conn = Connection::open(&path)?;
    conn.execute_batch(
        "PRAGMA journal_mode=WAL;
         PRAGMA synchronous=NORMAL;
         CREATE TABLE session (id TEXT PRIMARY KEY, title TEXT, created_at INTEGER);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, role TEXT, created_at INTEGER);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, type TEXT, data TEXT);",
    )?;
    conn.execute(
        "INSERT INTO session VALUES ('ses_1', 'bench session', 0)",
        [],
    )?;
    let noise = hex::encode(random_bytes(1 << 20, 6));
    let mut row = 0usize;
    while logical_size(&conn)? < target {
        let tx = conn.unchecked_transaction()?;
        for _ in 0..100 {
            row += 1;
            let at = (row * 1031) % (noise.len() - 2048);
            tx.execute(
                "INSERT INTO message VALUES (?1, 'ses_1', ?2, ?3)",
                rusqlite::params![
                    format!("msg_{row:07}"),
                    if row.is_multiple_of(2) {
                        "assistant"
                    } else {
                        "user"
                    },
                    i64::try_from(row)?
                ],
            )?;
            tx.execute(
                "INSERT INTO part VALUES (?1, ?2, 'text', ?3)",
                rusqlite::params![
                    format!("prt_{row:07}"),
                    format!("msg_{row:07}"),
                    format!("{{\"text\":\"{}\"}}", &noise[at..at + 2048])
                ],
            )?;
        }
        tx.commit()?;
        if row > 1_000_000 {
            bail!("{} did not reach {target} bytes", path.display());
        }
    }
    Ok(LiveDb {
        bytes: on_disk(&path)?,
        path,
        conn,
    })
}

/// Turns taken so far in this run, over every live database.
static TURNS: AtomicU64 = AtomicU64::new(1);

/// `part` rows a one-turn change rewrites: the issue measured 6 changed pages of a real
/// kilo.db after one turn.
pub const TURN_ROWS: u64 = 6;

impl LiveDb {
    /// One agent turn's worth of writes: [`TURN_ROWS`] `part` rows spread over the file get
    /// new text of the same length (each row fills most of one page), in one transaction.
    pub fn one_turn(&self) -> Result<()> {
        // Every turn of the run writes text no earlier turn wrote, also when
        // the host's rounds and then the edge's run over the same database.
        let round = TURNS.fetch_add(1, Ordering::Relaxed);
        let rows: i64 = self
            .conn
            .query_row("SELECT count(*) FROM part", [], |row| row.get(0))?;
        let rows = u64::try_from(rows)?.max(1);
        let noise = hex::encode(random_bytes(1024, 100 + round));
        let tx = self.conn.unchecked_transaction()?;
        for k in 0..TURN_ROWS {
            let row = 1 + (k * rows / TURN_ROWS + round * 37) % rows;
            tx.execute(
                "UPDATE part SET data = ?1 WHERE id = ?2",
                rusqlite::params![format!("{{\"text\":\"{noise}\"}}"), format!("prt_{row:07}")],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// The database's own bytes (pages × page size): what a consistent copy
/// holds, whatever the WAL holds besides.
fn logical_size(conn: &Connection) -> Result<u64> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0))?;
    let page: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0))?;
    Ok(u64::try_from(pages * page)?)
}

/// The database's bytes on disk, its WAL included.
fn on_disk(path: &Path) -> Result<u64> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::fs::metadata(&wal).map_or(0, |m| m.len());
    Ok(std::fs::metadata(path)?.len() + wal)
}

/// What the pushes measured.
#[derive(Debug, Clone, Copy)]
pub struct Pushes {
    /// The live database on disk (file and WAL).
    pub db_bytes: u64,
    /// Bytes each push uploaded (the consistent copy).
    pub size: u64,
    /// `stasis_client::snapshot::push`: copy, hash, upload, receipt checked.
    pub push: Latency,
    /// The push's local part alone: the copy and its hashes.
    pub local: Latency,
    /// Requests `stasis-client` retried over the whole workload.
    pub retries: u32,
}

/// Rounds of one push of `db` as the snapshot of `agent` in `town`, each
/// followed by its local part alone (the copy and its hashes, no
/// request). A first push warms up and is not counted.
pub async fn pushes(
    endpoint: &Arc<Endpoint>,
    town: &str,
    agent: &str,
    db: &LiveDb,
    bounds: Bounds,
) -> Result<Pushes> {
    let (client, retries) = container_client(endpoint)?;
    let agent = AgentRef::new(town, "r", agent)?;
    let size = push_once(&client, &agent, &db.path).await?.1;
    let deadline = Instant::now() + bounds.time;
    let (mut pushed, mut local) = (Vec::new(), Vec::new());
    while (pushed.len() as u64) < bounds.count && Instant::now() < deadline {
        let (took, stored) = push_once(&client, &agent, &db.path).await?;
        if stored != size {
            bail!("a push uploaded {stored} bytes, the first one {size}");
        }
        pushed.push(took);
        let source = db.path.clone();
        local.push(
            tokio::task::spawn_blocking(move || copy_and_hash(&source))
                .await
                .context("the local copy panicked")??,
        );
    }
    Ok(Pushes {
        db_bytes: db.bytes,
        size,
        push: Latency::of(pushed).context("no push finished")?,
        local: Latency::of(local).context("no copy finished")?,
        retries: retries.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// One push, on a blocking thread: how long it took and the bytes stored.
async fn push_once(client: &Client, agent: &AgentRef, db: &Path) -> Result<(Duration, u64)> {
    let (client, agent, db) = (client.clone(), agent.clone(), db.to_owned());
    tokio::task::spawn_blocking(move || {
        let options = PushOptions {
            deadline: Some(Instant::now() + PUSH_DEADLINE),
            whole_file: true,
            ..PushOptions::default()
        };
        let start = Instant::now();
        let receipt = snapshot::push(&client, &agent, &db, &options)?;
        Ok((start.elapsed(), receipt.size))
    })
    .await
    .context("a push panicked")?
}

/// What a push does before it uploads: the consistent copy (in memory at
/// this size) and its chunk and whole-file hashes.
fn copy_and_hash(db: &Path) -> Result<Duration> {
    let start = Instant::now();
    let mut copy = LocalCopy::take(db, &BackupOptions::default(), None)?;
    copy.bytes()?.image().chunked()?;
    Ok(start.elapsed())
}

/// What every push of `db` must do whatever it sends: the consistent copy
/// and the whole file's sha256, which every manifest carries (no chunk
/// hashes, no request).
pub fn copy_and_whole_hash(db: &Path) -> Result<Duration> {
    let start = Instant::now();
    let mut copy = LocalCopy::take(db, &BackupOptions::default(), None)?;
    let bytes = copy.bytes()?;
    let whole = match bytes.image() {
        Image::Memory(bytes) => Sha256::digest(bytes),
        // Above the client's in-memory limit: the copy is a file.
        Image::File(path) => {
            let mut hasher = Sha256::new();
            std::io::copy(&mut std::fs::File::open(path)?, &mut hasher)?;
            hasher.finalize()
        }
    };
    std::hint::black_box(whole);
    Ok(start.elapsed())
}
