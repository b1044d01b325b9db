//! What fencing costs: a one-event append with a container token (the town's standing first,
//! then the fenced append) against the same append with an admin token, one request at a
//! time, alternating. A measurement, not a check: it prints figures and asserts nothing about
//! speed. Run it against a host or the edge:
//!
//! ```text
//! cargo test -p stasis-conformance --release --test fencing_cost -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use stasis_conformance::tokens::{admin_token, container_token};
use stasis_conformance::town::Town;
use stasis_conformance::{call, json};

/// Appends timed per token kind.
const ROUNDS: usize = 400;
/// Appends per kind before timing starts.
const WARM_UP: usize = 40;

fn append(path: &str, token: &str) -> Duration {
    let started = Instant::now();
    let reply = call("POST", path)
        .token(token)
        .json(&json!({"events": [{"type": "tick", "data": {"n": 1}}]}))
        .send();
    let took = started.elapsed();
    assert_eq!(reply.status, 200, "{}", reply.text());
    took
}

fn summary(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len()).unwrap_or(1);
    println!(
        "{name}: n={} mean {:.3} ms, p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms",
        times.len(),
        mean.as_secs_f64() * 1e3,
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
    at(0.5)
}

#[test]
#[ignore = "a measurement: run it with --ignored --nocapture"]
fn an_append_with_a_container_token_against_one_with_an_admin_token() {
    let town = Town::fresh("fencing-cost");
    town.heartbeat("c-1");
    let (admin, container) = (admin_token(), container_token(&town.id, "c-1"));
    let path = town.agent("rig-1", "mayor").path("/events");
    for _ in 0..WARM_UP {
        append(&path, &admin);
        append(&path, &container);
    }
    let (mut by_admin, mut by_container) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        by_admin.push(append(&path, &admin));
        by_container.push(append(&path, &container));
    }
    let admin_p50 = summary("admin token", by_admin);
    let container_p50 = summary("container token", by_container);
    println!(
        "container token p50 - admin token p50: {:+.3} ms",
        (container_p50.as_secs_f64() - admin_p50.as_secs_f64()) * 1e3
    );
}
