//! Forwarding figures: events/s sustained from the synthetic kilo through a sidecar into one
//! agent of stasis, and the delay from emission until an event is readable from stasis's own
//! stream. [`measure_forwarding`] needs only a running stasis, a [`FakeKilo`] that a running
//! sidecar follows, and this file with fake_kilo.rs: the bench can include both with `#[path]`,
//! as sibling modules named `fake_kilo` and `measure`. The test that runs it is
//! `sidecar::forwarding_rate_and_delay`:
//!
//! `cargo test --release -p stasis-host --test client_end_to_end sidecar::forwarding_rate -- --ignored --nocapture`

#![allow(clippy::expect_used, reason = "measurement scaffolding fails loudly")]

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake_kilo::FakeKilo;

/// What one measurement found.
#[derive(Debug, Clone)]
pub struct Figures {
    /// Events in the burst, and how fast they became readable.
    pub burst_events: u64,
    pub events_per_sec: f64,
    /// Emission to readable, over the paced events.
    pub paced_events: u64,
    pub delay_median_ms: f64,
    pub delay_p99_ms: f64,
}

/// Emits `burst` events as fast as the source can, then `paced` events at `rate` per second,
/// each stamped with its emission time, and follows stasis's event stream (`authorization`:
/// a bearer header value) for `agent_path` until every one of them is readable.
pub fn measure_forwarding(
    stasis_base: &str,
    authorization: &str,
    agent_path: &str,
    kilo: &FakeKilo,
    burst: u64,
    paced: u64,
    rate: u64,
) -> Figures {
    let epoch = Instant::now();
    let arrivals = follow(stasis_base, authorization, agent_path, epoch);
    let started = Instant::now();
    for n in 0..burst {
        kilo.emit("bench.burst", json!({"sessionID": "ses_bench", "n": n}));
    }
    let mut last = 0;
    while last < burst {
        let (kind, n, _) = arrivals
            .recv_timeout(Duration::from_secs(120))
            .expect("the burst arrives");
        if kind == "bench.burst" {
            last = n + 1;
        }
    }
    let burst_secs = started.elapsed().as_secs_f64();

    let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
    let sender = std::thread::spawn({
        let kilo = kilo.clone();
        move || {
            for n in 0..paced {
                let due = epoch.elapsed();
                let at = u64::try_from(due.as_micros()).unwrap_or(u64::MAX);
                kilo.emit(
                    "bench.paced",
                    json!({"sessionID": "ses_bench", "n": n, "at_us": at}),
                );
                std::thread::sleep(interval);
            }
        }
    });
    let mut delays = Vec::new();
    while (delays.len() as u64) < paced {
        let (kind, _, delay) = arrivals
            .recv_timeout(Duration::from_secs(120))
            .expect("paced events arrive");
        if kind == "bench.paced" {
            delays.push(delay);
        }
    }
    sender.join().expect("the sender");
    delays.sort_unstable();
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    Figures {
        burst_events: burst,
        events_per_sec: burst as f64 / burst_secs,
        paced_events: paced,
        delay_median_ms: at(0.5),
        delay_p99_ms: at(0.99),
    }
}

/// Follows stasis's SSE stream from its current end; sends (type, n, µs since emission).
fn follow(
    base: &str,
    authorization: &str,
    agent_path: &str,
    epoch: Instant,
) -> mpsc::Receiver<(String, u64, u64)> {
    let url = format!("{base}{agent_path}/events");
    let page: Value = ureq::get(format!("{url}?limit=1"))
        .header("Authorization", authorization)
        .call()
        .expect("stasis answers")
        .body_mut()
        .read_json()
        .expect("a page");
    let after = page["last_seq"].as_u64().unwrap_or(0);
    follow_after(base, authorization, agent_path, after, epoch).expect("the event stream")
}

/// Follows stasis's SSE stream of `agent_path` from past `after`; sends (type, n, µs from the
/// event's `data.at_us` to its arrival, both measured from `epoch`).
pub fn follow_after(
    base: &str,
    authorization: &str,
    agent_path: &str,
    after: u64,
    epoch: Instant,
) -> Result<mpsc::Receiver<(String, u64, u64)>, ureq::Error> {
    let response = ureq::get(format!("{base}{agent_path}/events?after={after}"))
        .header("Authorization", authorization)
        .header("Accept", "text/event-stream")
        .call()?;
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let reader = BufReader::new(response.into_body().into_reader());
        for line in reader.lines().map_while(Result::ok) {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let now = u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
            let event: Value = serde_json::from_str(data).unwrap_or_default();
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            let n = event["data"]["n"].as_u64().unwrap_or(0);
            let delay = event["data"]["at_us"]
                .as_u64()
                .map_or(0, |at| now.saturating_sub(at));
            if send.send((kind, n, delay)).is_err() {
                return;
            }
        }
    });
    Ok(receive)
}
