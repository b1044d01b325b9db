//! Catching up: reading a full log of 10,000 items from its start.

use super::Bounds;
use crate::{
    client::{Call, Conn, Endpoint},
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

/// Pages one catch-up may take before the run fails.
const MAX_PAGES: usize = 100;

/// Latency of reading `log` (holding exactly `expected` items) from its
/// start to its end, following pages as a client would.
///
/// The first catch-up parses every page, checks that the pages together hold
/// every item and notes their cursors; it is not counted. The timed ones
/// request the same pages in turn (the log does not change), each after the
/// previous one has fully arrived, and check each body has the same length
/// as the first time, so that JSON parsing in the client is not timed.
pub async fn reads(
    endpoint: &Arc<Endpoint>,
    log: &Log,
    expected: usize,
    bounds: Bounds,
) -> Result<Latency> {
    let mut conn = Conn::open(endpoint).await?;
    let mut pages: Vec<(Call, usize)> = Vec::new();
    let mut after = 0;
    let mut got = 0;
    loop {
        if pages.len() >= MAX_PAGES {
            bail!("a catch-up took more than {MAX_PAGES} pages");
        }
        let call = log.read_after(after, expected);
        let body = conn.expect_ok(&call).await?;
        let page = log.page(&body)?;
        got += page.items;
        pages.push((call, body.len()));
        match page.next {
            Some(next) if next > after => after = next,
            Some(next) => bail!("a page with more to come did not move the cursor ({next})"),
            None => break,
        }
    }
    if got != expected {
        bail!("a read from the start returned {got} items, expected {expected}");
    }
    if pages.len() > 1 {
        eprintln!("    (a catch-up is {} pages)", pages.len());
    }
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        for (call, length) in &pages {
            let body = conn.expect_ok(call).await?;
            if body.len() != *length {
                bail!(
                    "reads of the same page returned {length} then {} bytes",
                    body.len()
                );
            }
        }
        samples.push(start.elapsed());
    }
    Latency::of(samples).context("no read finished")
}
