//! Host start: from spawning `stasis serve` to its first served requests,
//! with the compiled-component cache warm.

use super::Bounds;
use crate::{
    client::Conn,
    logs::Log,
    server::{HostConfig, StasisHost},
    stats::Latency,
};
use anyhow::{Context, Result};
use std::time::Instant;

/// Start times: to the first `/healthz` 200, and to the first answered read
/// of `probe` (an agent log the data folder already holds).
#[derive(Debug, Clone, Copy)]
pub struct Starts {
    /// Spawn to the first 200 from `/healthz`.
    pub healthy: Latency,
    /// Spawn to the first 200 from a read of the probe log.
    pub first_read: Latency,
}

/// Starts the host once to warm its caches, then `bounds.count` more times,
/// timing each.
pub async fn starts(config: &HostConfig, probe: &Log, bounds: Bounds) -> Result<Starts> {
    let warm = StasisHost::start(config).await?;
    Conn::open(warm.endpoint())
        .await?
        .expect_ok(&probe.read_from_start(10))
        .await?;
    warm.stop()?;

    let deadline = Instant::now() + bounds.time;
    let mut healthy = Vec::new();
    let mut first_read = Vec::new();
    while (healthy.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        let mut host = StasisHost::spawn(config)?;
        host.wait_healthy().await?;
        healthy.push(start.elapsed());
        Conn::open(host.endpoint())
            .await?
            .expect_ok(&probe.read_from_start(10))
            .await
            .with_context(|| {
                format!(
                    "the first read after a start; host log:\n{}",
                    host.log_tail()
                )
            })?;
        first_read.push(start.elapsed());
        host.stop()?;
    }
    Ok(Starts {
        healthy: Latency::of(healthy).context("no start finished")?,
        first_read: Latency::of(first_read).context("no start finished")?,
    })
}
