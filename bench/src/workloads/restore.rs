//! Pull (restore) of a SQLite database by `stasis-client`, with no chunk
//! cache: the manifest, then (every chunk being needed) the whole file in
//! one GET, its sha256 checked, `PRAGMA quick_check`, fsync and rename. Its
//! baseline, in the same round: a native copy of the same file + fsync +
//! sha256.

use super::{Bounds, container_client};
use crate::{client::Endpoint, stats::Latency};
use anyhow::{Context, Result, bail};
use stasis_client::{
    AgentRef,
    snapshot::{self, PullOptions, PullOutcome, PullTransfer, PushOptions},
};
use std::{
    fs::File,
    path::{Path, PathBuf},
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

/// How long one pull may take, retries included.
const PULL_DEADLINE: Duration = Duration::from_secs(300);

/// What the pulls measured.
#[derive(Debug, Clone, Copy)]
pub struct Pulls {
    /// Bytes of the database.
    pub size: u64,
    /// `snapshot::pull` into a fresh path, no cache.
    pub pull: Latency,
    /// Native copy + fsync + sha256 of the same bytes.
    pub native: Latency,
    /// What the last pull fetched.
    pub fetched: PullTransfer,
    /// Requests `stasis-client` retried over the whole workload.
    pub retries: u32,
}

/// Pushes `db` as `agent`'s snapshot once, then rounds of a pull into
/// `scratch` and the native copy of the pulled file.
pub async fn pulls(
    endpoint: &Arc<Endpoint>,
    town: &str,
    agent: &str,
    db: &Path,
    scratch: &Path,
    bounds: Bounds,
) -> Result<Pulls> {
    let (client, retries) = container_client(endpoint)?;
    let agent = AgentRef::new(town, "r", agent)?;
    let (pusher, who, source) = (client.clone(), agent.clone(), db.to_owned());
    let receipt = tokio::task::spawn_blocking(move || {
        snapshot::push(&pusher, &who, &source, &PushOptions::default())
    })
    .await
    .context("the push panicked")??;
    let deadline = Instant::now() + bounds.time;
    let (mut pulled, mut native) = (Vec::new(), Vec::new());
    let mut fetched = None;
    while (pulled.len() as u64) < bounds.count && Instant::now() < deadline {
        let out = scratch.join("restored.db");
        let copy = scratch.join("native-copy.db");
        for stale in [&out, &copy] {
            remove(stale)?;
        }
        let (client, who, target) = (client.clone(), agent.clone(), out.clone());
        let (took, outcome) = tokio::task::spawn_blocking(move || {
            let options = PullOptions {
                deadline: Some(Instant::now() + PULL_DEADLINE),
                ..PullOptions::default()
            };
            let start = Instant::now();
            let outcome = snapshot::pull(&client, &who, &target, &options);
            (start.elapsed(), outcome)
        })
        .await
        .context("a pull panicked")?;
        let PullOutcome::Pulled(got) = outcome? else {
            bail!("the snapshot just pushed is not there");
        };
        if got.sha256 != receipt.sha256 {
            bail!("pulled {}, pushed {}", got.sha256, receipt.sha256);
        }
        pulled.push(took);
        fetched = got.transfer;
        let start = Instant::now();
        copy_fsync_hash(&out, &copy)?;
        native.push(start.elapsed());
    }
    for done in [scratch.join("restored.db"), scratch.join("native-copy.db")] {
        remove(&done)?;
    }
    Ok(Pulls {
        size: receipt.size,
        pull: Latency::of(pulled).context("no pull finished")?,
        native: Latency::of(native).context("no native copy finished")?,
        fetched: fetched.context("no transfer figures")?,
        retries: retries.load(Ordering::Relaxed),
    })
}

/// The baseline: `source` copied to `dest`, fsynced, and hashed.
fn copy_fsync_hash(source: &Path, dest: &PathBuf) -> Result<()> {
    std::fs::copy(source, dest)?;
    File::open(dest)?.sync_all()?;
    snapshot::hash_file(dest)?;
    Ok(())
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}
