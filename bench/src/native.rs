//! In-process baselines measured in the same run as the server: what the
//! same storage work costs with no HTTP, no wasm and no rules in between.
//!
//! - batched inserts of the event rows into WAL SQLite files with the event
//!   log's own schema and PRAGMAs (`stasis_sqlite::SqliteStore`), one
//!   transaction per batch;
//! - a one-row commit into such a file;
//! - a bare `write` + `fdatasync` of a small record;
//! - a snapshot-sized file written, fsynced and read back, with and without
//!   the two sha256s the server computes (one on PUT, one on GET).

use crate::{
    logs::payloads,
    stats::{Latency, Rate},
    workloads::Bounds,
};
use anyhow::{Context, Result, anyhow};
use stasis_sqlite::{Durability, SqliteStore};
use std::{
    fs::{File, OpenOptions},
    io::Write,
    path::Path,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

const INSERT: &str = "INSERT INTO events (seq, type, session_id, data, created_at) VALUES (?1, 'bench', NULL, ?2, ?3)";

/// Opens a fresh database at `path` with the event log's schema.
fn open_log(path: &Path, durability: Durability) -> Result<SqliteStore> {
    let store = SqliteStore::open(path, durability).map_err(|e| anyhow!("{e:?}"))?;
    stasis_domain::event_log::migrate(&store).map_err(|e| anyhow!("{e:?}"))?;
    Ok(store)
}

/// Rows per second inserting `batch`-row transactions of `data_size`-byte
/// rows, one thread per file, `files` files in `dir`.
pub fn batched_inserts(
    dir: &Path,
    files: usize,
    batch: usize,
    data_size: usize,
    durability: Durability,
    bounds: Bounds,
) -> Result<Rate> {
    let datas = payloads(0, batch, data_size);
    let stores = (0..files)
        .map(|i| open_log(&dir.join(format!("native-{files}-{i}.sqlite")), durability))
        .collect::<Result<Vec<_>>>()?;
    let tickets = AtomicU64::new(0);
    let rows = AtomicU64::new(0);
    let start = Instant::now();
    let deadline = start + bounds.time;
    std::thread::scope(|scope| {
        let workers: Vec<_> = stores
            .into_iter()
            .map(|store| {
                let (datas, tickets, rows) = (&datas, &tickets, &rows);
                scope.spawn(move || {
                    insert_until(&store, datas, tickets, bounds.count, deadline, rows)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| anyhow!("a native insert thread panicked"))?
            })
            .collect::<Result<Vec<()>>>()
    })?;
    Ok(Rate {
        items: rows.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
    })
}

fn insert_until(
    store: &SqliteStore,
    datas: &[String],
    tickets: &AtomicU64,
    max_batches: u64,
    deadline: Instant,
    rows: &AtomicU64,
) -> Result<()> {
    let conn = store.connection();
    let mut seq: i64 = 0;
    while tickets.fetch_add(1, Ordering::Relaxed) < max_batches && Instant::now() < deadline {
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare_cached(INSERT)?;
            for data in datas {
                seq += 1;
                insert.execute(rusqlite::params![seq, data, now_ms()])?;
            }
        }
        tx.commit()?;
        rows.fetch_add(datas.len() as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Latency of committing one `data_size`-byte row per transaction.
pub fn single_row_commits(
    dir: &Path,
    data_size: usize,
    durability: Durability,
    bounds: Bounds,
) -> Result<Latency> {
    let store = open_log(&dir.join("native-single.sqlite"), durability)?;
    let conn = store.connection();
    let data = payloads(0, 1, data_size).concat();
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    let mut seq: i64 = 0;
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        seq += 1;
        let start = Instant::now();
        let tx = conn.unchecked_transaction()?;
        tx.prepare_cached(INSERT)?
            .execute(rusqlite::params![seq, data, now_ms()])?;
        tx.commit()?;
        samples.push(start.elapsed());
    }
    Latency::of(samples).context("no single-row commit finished")
}

/// Latency of appending `size` bytes to a file and `fdatasync`ing it.
pub fn write_fdatasync(dir: &Path, size: usize, bounds: Bounds) -> Result<Latency> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("native-fdatasync.log"))?;
    let record = payloads(0, 1, size).concat().into_bytes();
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        file.write_all(&record)?;
        file.sync_data()?;
        samples.push(start.elapsed());
    }
    Latency::of(samples).context("no fdatasync finished")
}

/// Latency of writing `bytes` to a new file, `fsync`ing it and reading it
/// back whole, with `hashes` sha256s of the bytes (0: none; 2: one before
/// the write and one of what was read, as a snapshot PUT and GET do). Each
/// round writes a new file; the previous one is removed outside the clock.
pub fn write_fsync_read(dir: &Path, bytes: &[u8], hashes: u32, bounds: Bounds) -> Result<Latency> {
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    let mut round = 0u64;
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let path = dir.join(format!("snapshot-{round}.bin"));
        let start = Instant::now();
        let mut digests = Vec::new();
        if hashes > 0 {
            digests.push(crate::workloads::snapshot::sha256_hex(bytes));
        }
        let mut file = File::create(&path)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        let read = std::fs::read(&path)?;
        for _ in 1..hashes {
            digests.push(crate::workloads::snapshot::sha256_hex(&read));
        }
        let elapsed = start.elapsed();
        if read.len() != bytes.len() || digests.windows(2).any(|pair| pair[0] != pair[1]) {
            return Err(anyhow!("{} read back differently", path.display()));
        }
        samples.push(elapsed);
        std::fs::remove_file(&path)?;
        round += 1;
    }
    Latency::of(samples).context("no write + fsync + read finished")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis()
        .try_into()
        .unwrap_or(i64::MAX)
}
