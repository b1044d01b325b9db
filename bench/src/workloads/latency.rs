//! One request at a time on one connection: how long each takes.

use super::Bounds;
use crate::{
    client::{Call, Conn, Endpoint},
    logs::{Log, payload},
    stats::Latency,
};
use anyhow::{Context, Result};
use std::{sync::Arc, time::Instant};

/// Requests not counted before the measured ones.
pub const WARM_UP: u64 = 10;

/// Latency of appending single `data_size`-byte items to `log`.
pub async fn appends(
    endpoint: &Arc<Endpoint>,
    log: &Log,
    data_size: usize,
    bounds: Bounds,
) -> Result<Latency> {
    let mut conn = Conn::open(endpoint).await?;
    log.create(&mut conn).await?;
    for i in 0..WARM_UP {
        conn.expect_ok(&log.append(&[payload(i, data_size)]))
            .await?;
    }
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    let mut i = WARM_UP;
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        // The body is built before the clock starts, as a client would have
        // it ready.
        let call = log.append(&[payload(i, data_size)]);
        let start = Instant::now();
        conn.expect_ok(&call).await?;
        samples.push(start.elapsed());
        i += 1;
    }
    Latency::of(samples).context("no append finished")
}

/// Latency of sending `call` (a request without side effects, such as
/// `GET /healthz`) over and over on one connection.
pub async fn requests(endpoint: &Arc<Endpoint>, call: &Call, bounds: Bounds) -> Result<Latency> {
    let mut conn = Conn::open(endpoint).await?;
    for _ in 0..WARM_UP {
        conn.expect_ok(call).await?;
    }
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        conn.expect_ok(call).await?;
        samples.push(start.elapsed());
    }
    Latency::of(samples).context("no request finished")
}
