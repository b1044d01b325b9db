//! The baselines of forwarding: the same events appended to stasis directly, timed the same
//! way (emitted to readable from stasis's event stream).

use super::{Sizes, Stasis};
use crate::stats::{Latency, Rate};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Events per direct append: the sidecar's own largest batch.
const BATCH: u64 = 1_000;
/// How long an event may take to become readable.
const PATIENCE: Duration = Duration::from_secs(120);

/// A fresh agent's path on `stasis`.
fn fresh_agent() -> Result<String> {
    let town = format!("bench-direct-{}", crate::server::random_hex(4)?);
    Ok(format!("/api/towns/{town}/rigs/r/agents/mayor"))
}

/// The burst appended in 1,000-event batches on one connection, from the first request to
/// the last event readable.
pub fn burst(stasis: &Stasis, sizes: &Sizes) -> Result<Rate> {
    let agent = fresh_agent()?;
    let arrivals = follow(stasis, &agent, Instant::now())?;
    let client = client();
    let started = Instant::now();
    for first in (0..sizes.burst).step_by(usize::try_from(BATCH)?) {
        let events: Vec<Value> = (first..(first + BATCH).min(sizes.burst))
            .map(|n| json!({"type": "bench.burst", "session_id": "ses_bench", "data": {"sessionID": "ses_bench", "n": n}}))
            .collect();
        append(&client, stasis, &agent, &json!({ "events": events }))?;
    }
    let mut last = 0;
    while last < sizes.burst {
        let (kind, n, _) = arrivals
            .recv_timeout(PATIENCE)
            .context("the burst arrives")?;
        if kind == "bench.burst" {
            last = n + 1;
        }
    }
    Ok(Rate {
        items: sizes.burst,
        elapsed: started.elapsed(),
    })
}

/// Single-event appends at the paced rate, each timed from just before its request to its
/// arrival on the event stream.
pub fn paced(stasis: &Stasis, sizes: &Sizes) -> Result<Latency> {
    let agent = fresh_agent()?;
    let epoch = Instant::now();
    let arrivals = follow(stasis, &agent, epoch)?;
    let client = client();
    let interval = Duration::from_secs_f64(1.0 / sizes.rate.max(1) as f64);
    let mut delays = Vec::new();
    for n in 0..sizes.paced {
        let due = epoch + interval.mul_f64(n as f64);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let at = u64::try_from(epoch.elapsed().as_micros())?;
        let event = json!({"type": "bench.paced", "session_id": "ses_bench",
            "data": {"sessionID": "ses_bench", "n": n, "at_us": at}});
        append(&client, stasis, &agent, &json!({ "events": [event] }))?;
        while let Ok((_, _, delay)) = arrivals.try_recv() {
            delays.push(Duration::from_micros(delay));
        }
    }
    while (delays.len() as u64) < sizes.paced {
        let (_, _, delay) = arrivals
            .recv_timeout(PATIENCE)
            .context("paced events arrive")?;
        delays.push(Duration::from_micros(delay));
    }
    Latency::of(delays).context("no paced events")
}

fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

fn append(client: &ureq::Agent, stasis: &Stasis, agent: &str, body: &Value) -> Result<()> {
    let response = client
        .post(format!("{}{agent}/events", stasis.url))
        .header("Authorization", format!("Bearer {}", stasis.token))
        .header("Content-Type", "application/json")
        .send(body.to_string().as_str())?;
    if !response.status().is_success() {
        bail!("a direct append answered {}", response.status());
    }
    Ok(())
}

/// Follows the agent's event stream from the start; sends (type, n, µs from `at_us` to now).
fn follow(
    stasis: &Stasis,
    agent: &str,
    epoch: Instant,
) -> Result<mpsc::Receiver<(String, u64, u64)>> {
    let authorization = format!("Bearer {}", stasis.token);
    super::measure::follow_after(&stasis.url, &authorization, agent, 0, epoch)
        .context("the event stream")
}
