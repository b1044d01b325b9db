//! The storage of kilo.db's history: a live ~25 MB database pushed once by
//! chunks (the baseline: what one version stores), then turns that each
//! rewrite [`TURN_ROWS`] rows spread over the file (a few pages) and push
//! again by chunks, every version kept (the default retention keeps all of
//! them for 24 hours). The figure is what the agent stores after the last
//! turn against after the first push.

use super::api::{HostStored, Side, host_stored};
use crate::workloads::push::{LiveDb, TURN_ROWS};
use anyhow::{Result, bail};

/// What the agent stores after the first version and after the last.
#[derive(Debug, Clone, Copy)]
pub struct Storage {
    /// Turns pushed after the first version.
    pub turns: u64,
    /// Bytes of the database's consistent copy.
    pub db_size: u64,
    /// Rows each turn rewrote.
    pub turn_rows: u64,
    /// Versions the history listed at the end (the current included).
    pub versions: usize,
    /// Distinct chunk bytes the kept versions name (the API), after the first push.
    pub chunks_one: u64,
    /// The same after the last turn.
    pub chunks_all: u64,
    /// The host's data folder after the first push (host only).
    pub host_one: Option<HostStored>,
    /// The same after the last turn.
    pub host_all: Option<HostStored>,
}

/// Pushes `db` once as agent `agent` of `side`, then `turns` turns.
pub fn run(side: &Side, agent: &str, db: &LiveDb, turns: u64) -> Result<Storage> {
    let stored = |side: &Side| -> Result<Option<HostStored>> {
        side.data_dir
            .as_deref()
            .map(|dir| host_stored(dir, &side.town, agent))
            .transpose()
    };
    let first = side.push(agent, &db.path)?;
    let (chunks_one, _) = side.chunk_bytes(agent)?;
    let host_one = stored(side)?;
    for turn in 0..turns {
        db.one_turn()?;
        let receipt = side.push(agent, &db.path)?;
        if turn % 20 == 19 {
            eprintln!("history: {}: {} turns pushed", side.name, turn + 1);
        }
        if receipt.size == 0 {
            bail!("a push stored nothing");
        }
    }
    let (chunks_all, versions) = side.chunk_bytes(agent)?;
    Ok(Storage {
        turns,
        db_size: first.size,
        turn_rows: TURN_ROWS,
        versions,
        chunks_one,
        chunks_all,
        host_one,
        host_all: stored(side)?,
    })
}
