//! Catching up: reading a full log of 10,000 items from its start.

use super::Bounds;
use crate::{
    client::{Conn, Endpoint},
    logs::{Log, payloads},
    stats::Latency,
};
use anyhow::{Context, Result, bail};
use std::{sync::Arc, time::Instant};

/// Items per request while filling.
const FILL_BATCH: usize = 1000;

/// Appends `total` items of `data_size` bytes to `log`.
pub async fn fill(
    endpoint: &Arc<Endpoint>,
    log: &Log,
    total: usize,
    data_size: usize,
) -> Result<()> {
    let mut conn = Conn::open(endpoint).await?;
    log.create(&mut conn).await?;
    let mut done = 0;
    while done < total {
        let count = FILL_BATCH.min(total - done);
        conn.expect_ok(&log.append(&payloads(u64::try_from(done)?, count, data_size)))
            .await?;
        done += count;
    }
    Ok(())
}

/// Latency of reading `log` (holding exactly `expected` items) from its
/// start; the first read is checked to return every item and not counted.
pub async fn reads(
    endpoint: &Arc<Endpoint>,
    log: &Log,
    expected: usize,
    bounds: Bounds,
) -> Result<Latency> {
    let mut conn = Conn::open(endpoint).await?;
    let call = log.read_from_start(expected);
    let first = conn.expect_ok(&call).await?;
    let got = log.count_read(&first)?;
    if got != expected {
        bail!("a read from the start returned {got} items, expected {expected}");
    }
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        let body = conn.expect_ok(&call).await?;
        samples.push(start.elapsed());
        if body.len() != first.len() {
            bail!(
                "reads of the same log returned {} then {} bytes",
                first.len(),
                body.len()
            );
        }
    }
    Latency::of(samples).context("no read finished")
}
