//! Many agents touched once: one small append to each of N agents over a
//! few keep-alive connections, with the host's open descriptors
//! (`/proc/PID/fd`) and resident set (`VmRSS`) sampled along the way. With
//! the host's open-object cap both level off once the cap is reached;
//! without one they grow with every agent.

use super::{Bounds, memory::status_kib};
use crate::client::{Call, Conn, Endpoint};
use anyhow::{Context, Result};
use bytes::Bytes;
use hyper::Method;
use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};
use tokio::task::JoinSet;

/// How often progress is checked for the next sample.
const POLL: Duration = Duration::from_millis(20);

/// One reading of the host.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Agents appended to so far.
    pub agents: u64,
    /// Descriptors the host held.
    pub fds: u64,
    /// Its resident set, in KiB.
    pub rss_kib: u64,
    /// Time since the first append.
    pub elapsed: Duration,
}

/// Appends one small event to each of `bounds.count` agents of `town`
/// (`a0`, `a1`, ...) over `conns` connections, reading host `pid` every
/// `every` agents, at the end, and once more after `settle`.
pub async fn touch_once(
    endpoint: &Arc<Endpoint>,
    pid: u32,
    town: &str,
    conns: usize,
    every: u64,
    settle: Duration,
    bounds: Bounds,
) -> Result<Vec<Sample>> {
    let tickets = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut set = JoinSet::new();
    for _ in 0..conns {
        let conn = Conn::open(endpoint).await?;
        let (tickets, done) = (Arc::clone(&tickets), Arc::clone(&done));
        let town = town.to_owned();
        set.spawn(append_each(conn, town, tickets, done, bounds, start));
    }
    let mut samples = vec![sample(pid, 0, start)?];
    let mut next = every.max(1);
    loop {
        tokio::select! {
            joined = set.join_next() => match joined {
                Some(result) => result.context("an append worker panicked")??,
                None => break,
            },
            () = tokio::time::sleep(POLL) => {}
        }
        let agents = done.load(Ordering::Relaxed);
        if agents >= next {
            samples.push(sample(pid, agents, start)?);
            next = agents - agents % every.max(1) + every.max(1);
        }
    }
    let agents = done.load(Ordering::Relaxed);
    samples.push(sample(pid, agents, start)?);
    tokio::time::sleep(settle).await;
    samples.push(sample(pid, agents, start)?);
    Ok(samples)
}

/// One connection's share: takes agent numbers until none are left.
async fn append_each(
    mut conn: Conn,
    town: String,
    tickets: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    bounds: Bounds,
    start: Instant,
) -> Result<()> {
    let body = Bytes::from_static(br#"{"events":[{"type":"touch","data":{"n":1}}]}"#);
    loop {
        let agent = tickets.fetch_add(1, Ordering::Relaxed);
        if agent >= bounds.count || start.elapsed() > bounds.time {
            return Ok(());
        }
        let path = format!("/api/towns/{town}/rigs/r/agents/a{agent}/events");
        conn.expect_ok(&Call::json(Method::POST, path, body.clone()))
            .await?;
        done.fetch_add(1, Ordering::Relaxed);
    }
}

fn sample(pid: u32, agents: u64, start: Instant) -> Result<Sample> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .with_context(|| format!("reading /proc/{pid}/fd"))?
        .count();
    Ok(Sample {
        agents,
        fds: u64::try_from(fds)?,
        rss_kib: status_kib(pid, "VmRSS")?,
        elapsed: start.elapsed(),
    })
}
