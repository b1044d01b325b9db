//! Inbox latency: Mayor messages posted one after another while `follow_inbox` runs, each
//! timed from the start of its `POST /mayor/message` to the follower's delivery into the
//! running kilo; then every one is checked to be in kilo's session once, in order.

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

/// Each probe's latency, sorted, with two of its parts (also sorted): the `POST` itself
/// (stasis appends and routes the message), and the follower's decision and send.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    /// Posted to delivered into the running kilo.
    pub total: Vec<Duration>,
    /// The `POST /mayor/message` round trip.
    pub post: Vec<Duration>,
    /// The follower's step: the delivery record appended, then kilo's `prompt_async`.
    pub deliver: Vec<Duration>,
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
    let delivered: Arc<Mutex<Vec<(Instant, Duration)>>> = Arc::default();
    let noted = Arc::clone(&delivered);
    let follower = resume::follow_inbox(
        client,
        agent,
        kilo.url(),
        &outcome.session_id,
        outcome.inbox_cursor,
        Arc::new(move |line: &str| {
            if line.contains("delivered seq") {
                lock(&noted).push((Instant::now(), step_of(line)));
            }
        }),
    )?;
    let mut latencies = Latencies::default();
    for i in 0..PROBES {
        let before = lock(&delivered).len();
        let posted = Instant::now();
        stage.post_mayor_message(&probe(i))?;
        latencies.post.push(posted.elapsed());
        let (at, step) = poll("the follower's delivery", DELIVERY, || {
            Ok(lock(&delivered).get(before).copied())
        })?;
        latencies.total.push(at.saturating_duration_since(posted));
        latencies.deliver.push(step);
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
    ] {
        list.sort();
    }
    stage.say(&format!(
        "   ✓ {PROBES} messages delivered, each once and in order; posted → delivered p50 \
         {:.1?}, p99 {:.1?}",
        percentile(&latencies.total, 50),
        percentile(&latencies.total, 99)
    ));
    Ok(latencies)
}

/// The follower's own step, from its line `... (decided and sent in N µs)`.
fn step_of(line: &str) -> Duration {
    let micros = line
        .rsplit_once(" in ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Duration::from_micros(micros)
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
