//! Dispatch with a summariser: a Mayor whose log outgrows the default
//! budget, re-dispatched on a host whose summariser has a current summary
//! cached, against the same dispatch on a host with no summariser (the
//! omitted turns cut).
//!
//! Both hosts hold the same log. The summarising host's first dispatches
//! (not timed) make the summary with the fake model, until one answers
//! `cached`; then both hosts are asked in alternating rounds, so that a busy
//! machine skews both alike. Every timed answer is checked: `cached` with
//! the summary turn first on one host, `not_configured` on the other.

use super::Bounds;
use crate::{
    client::{Call, Conn, Endpoint},
    stats::Latency,
};
use anyhow::{Context, Result, bail};
use hyper::Method;
use serde_json::{Value, json};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// User turns in the Mayor's log (the default budget of 50 turns omits 251).
pub const TURNS: usize = 300;
/// Turns per append while filling (3 events each).
const FILL_TURNS: usize = 100;
/// Dispatches allowed to make the summary before the run gives up (the
/// summariser makes a bounded number of calls per rebuild).
const MAX_WARMUPS: usize = 20;
/// Alternating rounds of timed dispatches.
const ROUNDS: u64 = 5;

/// What the dispatches measured.
#[derive(Debug, Clone, Copy)]
pub struct SummaryDispatches {
    /// Dispatches answered from a current cached summary.
    pub cached: Latency,
    /// The same dispatches on a host with no summariser.
    pub plain: Latency,
    /// Turns the dispatch omitted (summarised on one host, cut on the other).
    pub omitted: u64,
    /// Dispatches it took to make the summary (not timed).
    pub warmups: usize,
}

/// Registers the Mayor at `agent_path` and appends [`TURNS`] user turns of
/// about 190 characters each.
pub async fn fill(endpoint: &Arc<Endpoint>, agent_path: &str) -> Result<()> {
    let mut conn = Conn::open(endpoint).await?;
    let role = json!({ "role": "mayor" }).to_string();
    conn.expect_ok(&Call::json(Method::PUT, agent_path, role.into()))
        .await?;
    for first in (0..TURNS).step_by(FILL_TURNS) {
        let events: Vec<Value> = (first..TURNS.min(first + FILL_TURNS))
            .flat_map(user_turn)
            .collect();
        let body = json!({ "events": events }).to_string();
        let call = Call::json(Method::POST, format!("{agent_path}/events"), body.into());
        conn.expect_ok(&call).await?;
    }
    Ok(())
}

/// The three events of user turn `index`.
fn user_turn(index: usize) -> [Value; 3] {
    let id = format!("u{index:03}");
    let text = format!(
        "Turn {index:03}: please look at the failing migration in the billing crate, \
         keep the public API as it is, and tell me which tests you ran before you push \
         anything to the shared branch."
    );
    let info = json!({ "id": id, "role": "user" });
    let part = json!({ "id": format!("{id}-part"), "type": "text", "text": text });
    [
        json!({ "type": "message.created", "data": { "info": info } }),
        json!({ "type": "message_part.updated", "data": { "info": info, "part": part } }),
        json!({ "type": "message.completed", "data": { "info": info } }),
    ]
}

/// Makes the summary on `summarised`, then times dispatches of the Mayor on
/// both hosts in alternating rounds within `bounds`.
pub async fn dispatches(
    summarised: &Arc<Endpoint>,
    plain: &Arc<Endpoint>,
    agent_path: &str,
    bounds: Bounds,
) -> Result<SummaryDispatches> {
    let call = Call::json(
        Method::POST,
        format!("{agent_path}/dispatch"),
        "{}".to_owned().into(),
    );
    let mut with = Conn::open(summarised).await?;
    let mut without = Conn::open(plain).await?;
    let mut warmups = 0;
    let omitted = loop {
        if warmups == MAX_WARMUPS {
            bail!("{MAX_WARMUPS} dispatches did not make a current summary");
        }
        warmups += 1;
        let answer = dispatch(&mut with, &call).await?;
        if status(&answer)? == "cached" {
            break omitted_turns(&answer)?;
        }
    };
    let plain_omitted = omitted_turns(&dispatch(&mut without, &call).await?)?;
    // The summary turn counts within the budget: one more turn is omitted.
    if plain_omitted + 1 != omitted {
        bail!("the hosts omit {omitted} and {plain_omitted} turns of the same log");
    }

    let per_round = bounds.count.div_ceil(ROUNDS).max(1);
    let deadline = Instant::now() + bounds.time;
    let (mut cached, mut cut) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        cached.extend(timed(&mut with, &call, "cached", per_round, deadline).await?);
        cut.extend(timed(&mut without, &call, "not_configured", per_round, deadline).await?);
    }
    Ok(SummaryDispatches {
        cached: Latency::of(cached).context("no dispatch with a summary was timed")?,
        plain: Latency::of(cut).context("no dispatch without a summariser was timed")?,
        omitted,
        warmups,
    })
}

/// `count` dispatches (or until `deadline`), each checked to answer
/// `expected` as its summary status.
async fn timed(
    conn: &mut Conn,
    call: &Call,
    expected: &str,
    count: u64,
    deadline: Instant,
) -> Result<Vec<Duration>> {
    let mut samples = Vec::new();
    while (samples.len() as u64) < count && Instant::now() < deadline {
        let started = Instant::now();
        let answer = dispatch(conn, call).await?;
        samples.push(started.elapsed());
        let got = status(&answer)?;
        if got != expected {
            bail!("a dispatch's summary was {got}, expected {expected}");
        }
    }
    Ok(samples)
}

async fn dispatch(conn: &mut Conn, call: &Call) -> Result<Value> {
    let body = conn.expect_ok(call).await?;
    let answer: Value = serde_json::from_slice(&body).context("a dispatch's answer")?;
    Ok(answer["dispatch"]["prior_conversation"].clone())
}

fn status(prior: &Value) -> Result<&str> {
    let status = prior["summary"]["status"]
        .as_str()
        .with_context(|| format!("a dispatch without a summary status: {prior}"))?;
    if status == "cached" && prior["turns"][0]["summary"] != json!(true) {
        bail!("a cached summary that is not the first turn: {prior}");
    }
    Ok(status)
}

fn omitted_turns(prior: &Value) -> Result<u64> {
    prior["omitted_turns"]
        .as_u64()
        .with_context(|| format!("a dispatch without omitted_turns: {prior}"))
}
