//! Fork and restore of a large agent: its log of `events` events and a
//! ~100 MB kilo.db, with a checkpoint and a memory value, written in two
//! halves (kilo.db, checkpoint and memory pushed after each, one turn
//! apart). Then, timed, each against a checkpoint PUT of the same agent in
//! the same round:
//!
//! - `POST /fork` at the last seq into a new agent (its events, its kilo.db
//!   as a manifest of the source's chunks); on the host, the bytes of chunk
//!   files the fork's KV folder got (the aim: none);
//! - `POST /restore` in place to the first half's seq, then the restore to
//!   its undo pin (each checked: the checkpoint is the first half's, then
//!   the second's).

use super::api::{Side, host_chunk_files};
use crate::{logs::payload, stats::Latency, workloads::push::LiveDb};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::time::Duration;

/// Events per append.
const APPEND_BATCH: u64 = 100;
/// Bytes of each event's data (a kilo part update's order of size).
const EVENT_DATA_BYTES: usize = 400;

/// What the forks and restores measured.
#[derive(Debug, Clone)]
pub struct Forks {
    /// Events of the source.
    pub events: u64,
    /// Bytes of the source's kilo.db (its consistent copy).
    pub db_size: u64,
    /// Chunks its manifest names.
    pub db_chunks: usize,
    /// `POST /fork` at the last seq.
    pub fork: Latency,
    /// The largest bytes of chunk files a fork's KV folder got (host only).
    pub copied: Option<u64>,
    /// `POST /restore` to the first half's seq.
    pub restore: Latency,
    /// `POST /restore` to its undo pin.
    pub undo: Latency,
    /// `PUT /checkpoint` of the same agent, one per fork and per restore.
    pub checkpoint: Latency,
}

/// Writes the source `agent` on `side`, then `rounds` forks and restores.
pub fn run(side: &Side, agent: &str, db: &LiveDb, events: u64, rounds: u64) -> Result<Forks> {
    side.expect(
        "PUT",
        &side.path(agent, ""),
        Some(&json!({"role": "polecat"})),
    )?;
    let half = events / 2;
    append(side, agent, 0, half)?;
    write_state(side, agent, 1)?;
    side.push(agent, &db.path)?;
    db.one_turn()?;
    append(side, agent, half, events - half)?;
    write_state(side, agent, 2)?;
    let pushed = side.push(agent, &db.path)?;
    let (manifest, _) = side.expect("GET", &side.path(agent, "/db-snapshot/manifest"), None)?;
    let db_chunks = manifest["chunks"].as_array().map_or(0, Vec::len);

    let (mut forks, mut checkpoints, mut copied) = (Vec::new(), Vec::new(), None);
    for round in 0..rounds {
        let fork = format!("{agent}-fork-{round}");
        let body = json!({"point": {"seq": events}, "agent": fork});
        let (record, took) = side.expect("POST", &side.path(agent, "/fork"), Some(&body))?;
        if record["forked_from"]["seq"].as_u64() != Some(events) {
            bail!("the fork's record does not show its point: {record}");
        }
        forks.push(took);
        checkpoints.push(write_checkpoint(side, agent, 2)?);
        if round == 0 {
            check_fork(side, &fork, events)?;
        }
        if let Some(dir) = &side.data_dir {
            let bytes = host_chunk_files(dir, &side.town, &fork)?;
            copied = Some(copied.unwrap_or(0).max(bytes));
        }
    }

    let (mut restores, mut undos) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let body = json!({"seq": half});
        let (answer, took) = side.expect("POST", &side.path(agent, "/restore"), Some(&body))?;
        restores.push(took);
        expect_turn(side, agent, 1)?;
        let pin = answer["undo"]["pin"].as_str().context("no undo pin")?;
        let body = json!({"pin": pin});
        let (_, took) = side.expect("POST", &side.path(agent, "/restore"), Some(&body))?;
        undos.push(took);
        expect_turn(side, agent, 2)?;
        checkpoints.push(write_checkpoint(side, agent, 2)?);
    }
    Ok(Forks {
        events,
        db_size: pushed.size,
        db_chunks,
        fork: Latency::of(forks).context("no fork")?,
        copied,
        restore: Latency::of(restores).context("no restore")?,
        undo: Latency::of(undos).context("no undo")?,
        checkpoint: Latency::of(checkpoints).context("no checkpoint PUT")?,
    })
}

/// Appends `count` events after the first `done`, a batch at a time.
fn append(side: &Side, agent: &str, done: u64, count: u64) -> Result<()> {
    let path = side.path(agent, "/events");
    let mut written = 0;
    while written < count {
        let n = APPEND_BATCH.min(count - written);
        let batch: Vec<Value> = (0..n)
            .map(|i| {
                let data: Value =
                    serde_json::from_str(&payload(done + written + i, EVENT_DATA_BYTES))
                        .unwrap_or(Value::Null);
                json!({"type": "message.part.updated", "session_id": "ses_1", "data": data})
            })
            .collect();
        side.expect("POST", &path, Some(&json!({ "events": batch })))?;
        written += n;
    }
    Ok(())
}

/// The checkpoint and a memory value of turn `turn`.
fn write_state(side: &Side, agent: &str, turn: u64) -> Result<()> {
    write_checkpoint(side, agent, turn)?;
    let body = json!({"turn": turn});
    side.expect("PUT", &side.path(agent, "/memory/notes"), Some(&body))?;
    Ok(())
}

/// A checkpoint PUT of turn `turn`: the baseline's one write.
fn write_checkpoint(side: &Side, agent: &str, turn: u64) -> Result<Duration> {
    let body = json!({"turn": turn});
    Ok(side
        .expect("PUT", &side.path(agent, "/checkpoint"), Some(&body))?
        .1)
}

/// The checkpoint is turn `turn`'s.
fn expect_turn(side: &Side, agent: &str, turn: u64) -> Result<()> {
    let (checkpoint, _) = side.expect("GET", &side.path(agent, "/checkpoint"), None)?;
    if checkpoint["turn"].as_u64() != Some(turn) {
        bail!("the checkpoint is {checkpoint}, not turn {turn}'s");
    }
    Ok(())
}

/// The fork holds the source's last event, and its kilo.db's manifest.
fn check_fork(side: &Side, fork: &str, events: u64) -> Result<()> {
    let path = side.path(fork, &format!("/events?after={}&limit=10", events - 1));
    let (page, _) = side.expect("GET", &path, None)?;
    let seqs: Vec<u64> = (page["events"].as_array().into_iter().flatten())
        .filter_map(|e| e["seq"].as_u64())
        .collect();
    if seqs != [events] {
        bail!("the fork's log ends with {seqs:?}, not {events}");
    }
    side.expect("GET", &side.path(fork, "/db-snapshot/manifest"), None)?;
    Ok(())
}
