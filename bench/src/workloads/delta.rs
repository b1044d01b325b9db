//! The delta push after one agent turn: the live database (see
//! [`push::live_database`]) changes by one turn ([`LiveDb::one_turn`]), then
//! `stasis-client` pushes it by chunks (those that differ from its previous
//! push), then pushes the same database whole: the baseline, measured in the
//! same round.
//!
//! Each round first brings the server's snapshot back to the database's
//! chunks (untimed), as a sidecar's previous push would have left it, and
//! the timed push knows those chunks, as the sidecar does. Each timed push
//! starts [`TURN_PAUSE`] after the push before it, as a real turn takes
//! seconds: the server has collected the chunks that push superseded, and
//! the figure is the push's own, not that housekeeping's.

use super::{
    Bounds, container_client,
    push::{self, LiveDb, TURN_ROWS},
};
use crate::{client::Endpoint, stats::Latency};
use anyhow::{Context, Result, bail};
use stasis_client::{
    AgentRef, Client,
    snapshot::{
        self, ChunkedFile, LocalCopy, PushOptions, PushReceipt, PushTransfer, TransferMode,
    },
};
use std::{
    path::Path,
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

/// How long one push may take, retries included.
const PUSH_DEADLINE: Duration = Duration::from_secs(120);

/// The pause before each timed push: far shorter than a real agent turn,
/// far longer than the host's collection after a 25 MB push (tens of ms).
const TURN_PAUSE: Duration = Duration::from_millis(300);

/// What the delta pushes measured.
#[derive(Debug, Clone, Copy)]
pub struct DeltaPushes {
    /// Bytes of the consistent copy.
    pub size: u64,
    /// Rows rewritten per turn.
    pub turn_rows: u64,
    /// The delta push after a turn: copy, chunk hashes, missing, uploads, commit.
    pub delta: Latency,
    /// The whole-file push of the same database, right after.
    pub whole: Latency,
    /// What any push must do before it sends anything, right after: the
    /// consistent copy and the whole file's sha256.
    pub floor: Latency,
    /// The largest delta push's transfer over the rounds.
    pub sent: PushTransfer,
    /// Requests `stasis-client` retried over the whole workload.
    pub retries: u32,
}

impl DeltaPushes {
    /// Snapshot bytes sent by the delta push ÷ the file's size.
    pub fn bytes_ratio(&self) -> f64 {
        self.sent.bytes_sent as f64 / self.size.max(1) as f64
    }

    /// [`Self::floor`] ÷ the whole-file push: the least this workload's
    /// ratio can be on this machine.
    pub fn floor_ratio(&self) -> f64 {
        self.floor.median.as_secs_f64() / self.whole.median.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Every request body (the JSON of `missing` and the manifest included) ÷ the file's size.
    pub fn body_ratio(&self) -> f64 {
        self.sent.body_bytes_sent as f64 / self.size.max(1) as f64
    }
}

/// Rounds of: resync (untimed), one turn, the delta push, the whole-file
/// push of the same database.
pub async fn delta_pushes(
    endpoint: &Arc<Endpoint>,
    town: &str,
    agent: &str,
    db: &LiveDb,
    bounds: Bounds,
) -> Result<DeltaPushes> {
    let (client, retries) = container_client(endpoint)?;
    let agent = AgentRef::new(town, "r", agent)?;
    let deadline = Instant::now() + bounds.time;
    let (mut deltas, mut wholes, mut floors) = (Vec::new(), Vec::new(), Vec::new());
    let mut largest: Option<PushTransfer> = None;
    let mut size = 0;
    while (deltas.len() as u64) < bounds.count && Instant::now() < deadline {
        let previous = resync(&client, &agent, &db.path).await?;
        db.one_turn()?;
        tokio::time::sleep(TURN_PAUSE).await;
        let (took, receipt) = push_once(&client, &agent, &db.path, Some(previous)).await?;
        let sent = receipt.transfer.context("no transfer figures")?;
        if sent.mode != TransferMode::Chunks {
            bail!("the server does not serve the chunk routes: the push went whole");
        }
        deltas.push(took);
        size = receipt.size;
        if largest.is_none_or(|l| sent.bytes_sent > l.bytes_sent) {
            largest = Some(sent);
        }
        tokio::time::sleep(TURN_PAUSE).await;
        let (took, whole) = push_once(&client, &agent, &db.path, None).await?;
        if whole.sha256 != receipt.sha256 {
            bail!("the whole-file push stored other bytes than the delta push");
        }
        wholes.push(took);
        let source = db.path.clone();
        floors.push(
            tokio::task::spawn_blocking(move || push::copy_and_whole_hash(&source))
                .await
                .context("the local copy panicked")??,
        );
    }
    Ok(DeltaPushes {
        size,
        turn_rows: TURN_ROWS,
        delta: Latency::of(deltas).context("no delta push finished")?,
        whole: Latency::of(wholes).context("no whole-file push finished")?,
        floor: Latency::of(floors).context("no copy finished")?,
        sent: largest.context("no delta push finished")?,
        retries: retries.load(Ordering::Relaxed),
    })
}

/// The untimed push that brings the server back to the database's chunks,
/// as a sidecar's previous push would: the chunks it pushed, which the next
/// push knows.
async fn resync(client: &Client, agent: &AgentRef, db: &Path) -> Result<Arc<ChunkedFile>> {
    let (client, agent, db) = (client.clone(), agent.clone(), db.to_owned());
    tokio::task::spawn_blocking(move || {
        let options = PushOptions {
            deadline: Some(Instant::now() + PUSH_DEADLINE),
            ..PushOptions::default()
        };
        let mut copy = LocalCopy::take(&db, &options.backup, None)?;
        let bytes = copy.bytes()?;
        let chunked = bytes.image().chunked()?;
        snapshot::upload_image(&client, &agent, bytes.image(), &chunked, &options)?;
        Ok(Arc::new(chunked))
    })
    .await
    .context("a push panicked")?
}

/// One push on a blocking thread: how long it took and its receipt. With
/// the chunks of the previous push it goes by chunks; without, whole.
async fn push_once(
    client: &Client,
    agent: &AgentRef,
    db: &Path,
    previous: Option<Arc<ChunkedFile>>,
) -> Result<(Duration, PushReceipt)> {
    let (client, agent, db) = (client.clone(), agent.clone(), db.to_owned());
    tokio::task::spawn_blocking(move || {
        let options = PushOptions {
            deadline: Some(Instant::now() + PUSH_DEADLINE),
            whole_file: previous.is_none(),
            previous,
            ..PushOptions::default()
        };
        let start = Instant::now();
        let receipt = snapshot::push(&client, &agent, &db, &options)?;
        Ok((start.elapsed(), receipt))
    })
    .await
    .context("a push panicked")?
}
