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

/// The latencies, sorted.
pub(super) fn measure(
    stage: &Stage<'_>,
    client: &Client,
    agent: &AgentRef,
    kilo: &Kilo,
    outcome: &ResumeOutcome,
) -> Result<Vec<Duration>> {
    stage.say(&format!(
        "4. follow_inbox on B; {PROBES} Mayor messages, each timed from its POST to its delivery"
    ));
    let delivered: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let noted = Arc::clone(&delivered);
    let follower = resume::follow_inbox(
        client,
        agent,
        kilo.url(),
        &outcome.session_id,
        outcome.inbox_cursor,
        Arc::new(move |line: &str| {
            if line.contains("delivered seq") {
                lock(&noted).push(Instant::now());
            }
        }),
    )?;
    let mut latencies = Vec::with_capacity(PROBES);
    for i in 0..PROBES {
        let before = lock(&delivered).len();
        let posted = Instant::now();
        stage.post_mayor_message(&probe(i))?;
        let at = poll("the follower's delivery", DELIVERY, || {
            Ok(lock(&delivered).get(before).copied())
        })?;
        latencies.push(at.saturating_duration_since(posted));
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
    latencies.sort();
    stage.say(&format!(
        "   ✓ {PROBES} messages delivered, each once and in order; posted → delivered p50 \
         {:.1?}, p99 {:.1?}",
        percentile(&latencies, 50),
        percentile(&latencies, 99)
    ));
    Ok(latencies)
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
