//! Inbox latency: Mayor messages posted one after another while `follow_inbox` runs, each
//! timed from the start of its `POST /mayor/message` to the follower's delivery into the
//! running kilo; then every one is checked to be in kilo's session once, in order. Each probe
//! is posted once kilo is idle again after the previous one's turn: a message posted while a
//! turn runs waits on kilo itself (its `prompt_async` took up to 0.8 s then), which is kilo's
//! time, not the inbox's; kilo's own acceptance time is reported beside the total.

use super::super::{Stage, poll};
use crate::{Kilo, KiloMessage};
use anyhow::{Result, bail};
use stasis_client::resume::{self, ResumeOutcome};
use stasis_client::{AgentRef, Client};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Messages timed.
pub const PROBES: usize = 50;
/// How long one delivery may take.
const DELIVERY: Duration = Duration::from_secs(30);

fn probe(i: usize) -> String {
    format!("Latency probe {i:02}: no answer needed.")
}

/// Each probe's latency, sorted, with its parts (also sorted): the `POST` itself (stasis
/// appends and routes the message), the follower's decision and send, and of that kilo's own
/// acceptance of the message.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    /// Posted to delivered into the running kilo.
    pub total: Vec<Duration>,
    /// The `POST /mayor/message` round trip.
    pub post: Vec<Duration>,
    /// The follower's step: the delivery record appended, then kilo's `prompt_async`.
    pub deliver: Vec<Duration>,
    /// Of the follower's step: kilo's `prompt_async` round trip.
    pub runtime: Vec<Duration>,
    /// The total less kilo's `prompt_async`: what stasis adds.
    pub stasis: Vec<Duration>,
}

/// The latencies.
pub(super) fn measure(
    stage: &Stage<'_>,
    client: &Client,
    agent: &AgentRef,
    kilo: &Kilo,
    outcome: &ResumeOutcome,
) -> Result<Latencies> {
    stage.say(&format!(
        "4. follow_inbox on B; {PROBES} Mayor messages, each timed from its POST to its delivery"
    ));
    let delivered: Arc<Mutex<Vec<(Instant, Steps)>>> = Arc::default();
    let noted = Arc::clone(&delivered);
    let follower = resume::follow_inbox(
        client,
        agent,
        kilo.url(),
        &outcome.session_id,
        outcome.inbox_cursor,
        Arc::new(move |line: &str| {
            if line.contains("delivered seq") {
                lock(&noted).push((Instant::now(), steps_of(line)));
            }
        }),
    )?;
    let events = kilo.events()?;
    let mut latencies = Latencies::default();
    for i in 0..PROBES {
        let before = lock(&delivered).len();
        let mark = events.len();
        let posted = Instant::now();
        stage.post_mayor_message(&probe(i))?;
        latencies.post.push(posted.elapsed());
        let (at, steps) = poll("the follower's delivery", DELIVERY, || {
            Ok(lock(&delivered).get(before).copied())
        })?;
        let total = at.saturating_duration_since(posted);
        latencies.total.push(total);
        latencies.deliver.push(steps.deliver);
        latencies.runtime.push(steps.runtime);
        latencies.stasis.push(total.saturating_sub(steps.runtime));
        events.wait_for_idle(&outcome.session_id, mark, DELIVERY)?;
    }
    follower.stop();
    let api = kilo.api();
    let session = &outcome.session_id;
    let probes = poll("every probe in kilo's session", DELIVERY, || {
        let messages = api.messages(session)?;
        let probes = probes_in(&messages);
        Ok((probes.len() >= PROBES).then_some(probes))
    })?;
    let expected: Vec<String> = (0..PROBES).map(probe).collect();
    if probes != expected {
        bail!("kilo's session holds the probes {probes:?}, not each once in order");
    }
    for list in [
        &mut latencies.total,
        &mut latencies.post,
        &mut latencies.deliver,
        &mut latencies.runtime,
        &mut latencies.stasis,
    ] {
        list.sort();
    }
    let [total, post, deliver, runtime, stasis] = [
        &latencies.total,
        &latencies.post,
        &latencies.deliver,
        &latencies.runtime,
        &latencies.stasis,
    ]
    .map(|values| (percentile(values, 50), percentile(values, 99)));
    stage.say(&format!(
        "   ✓ {PROBES} messages delivered, each once and in order; posted → delivered p50 \
         {:.1?}, p99 {:.1?}; stasis's share (the total less kilo accepting the message) p50 \
         {:.1?}, p99 {:.1?}. Parts: the POST p50 {:.1?}, p99 {:.1?}; the follower's record and \
         send p50 {:.1?}, p99 {:.1?}; kilo's prompt_async p50 {:.1?}, p99 {:.1?}",
        total.0,
        total.1,
        stasis.0,
        stasis.1,
        post.0,
        post.1,
        deliver.0,
        deliver.1,
        runtime.0,
        runtime.1
    ));
    Ok(latencies)
}

/// The follower's step and kilo's part of it, from its line `... (decided and sent in N µs,
/// of which the runtime accepting it M µs)`.
#[derive(Debug, Clone, Copy)]
struct Steps {
    deliver: Duration,
    runtime: Duration,
}

fn steps_of(line: &str) -> Steps {
    let micros_after = |mark: &str| {
        line.split_once(mark)
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .map_or(Duration::ZERO, Duration::from_micros)
    };
    Steps {
        deliver: micros_after("decided and sent in "),
        runtime: micros_after("the runtime accepting it "),
    }
}

fn probes_in(messages: &[KiloMessage]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m.info.role == "user")
        .map(KiloMessage::text)
        .filter(|t| t.starts_with("Latency probe"))
        .map(|t| t.chars().take_while(|c| *c != '\n').collect())
        .collect()
}

/// The `p`th percentile of sorted `values` (nearest rank).
pub fn percentile(values: &[Duration], p: usize) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * values.len()).div_ceil(100).clamp(1, values.len());
    values[rank - 1]
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
