//! Sustained appends: N connections, each appending the same batch to its
//! own log over and over (logs may repeat across connections).

use super::Bounds;
use crate::{
    client::{Conn, Endpoint},
    logs::{Log, payloads},
    stats::Rate,
};
use anyhow::{Context, Result};
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};
use tokio::task::JoinSet;

/// Items appended per second with one connection per entry of `logs`,
/// `batch` items of `data_size` bytes a request.
pub async fn appends(
    endpoint: &Arc<Endpoint>,
    logs: &[Log],
    batch: usize,
    data_size: usize,
    bounds: Bounds,
) -> Result<Rate> {
    let mut workers = Vec::with_capacity(logs.len());
    for (index, log) in logs.iter().enumerate() {
        let mut conn = Conn::open(endpoint).await?;
        log.create(&mut conn).await?;
        let first = u64::try_from(index * batch)?;
        let call = log.append(&payloads(first, batch, data_size));
        // Warm-up: the first append creates the object, opens its database
        // and fills caches; it is not counted.
        conn.expect_ok(&call).await?;
        workers.push((conn, call));
    }

    let tickets = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + bounds.time;
    let mut set = JoinSet::new();
    for (mut conn, call) in workers {
        let tickets = Arc::clone(&tickets);
        set.spawn(async move {
            let mut requests = 0u64;
            while tickets.fetch_add(1, Ordering::Relaxed) < bounds.count
                && Instant::now() < deadline
            {
                conn.expect_ok(&call).await?;
                requests += 1;
            }
            anyhow::Ok(requests)
        });
    }
    let mut requests = 0u64;
    while let Some(joined) = set.join_next().await {
        requests += joined.context("an append worker panicked")??;
    }
    Ok(Rate {
        items: requests * u64::try_from(batch)?,
        elapsed: start.elapsed(),
    })
}
