//! Conversation rebuild: an agent's log of streamed message events turned
//! into turns (`GET /conversation`), against a plain read of the same events
//! (`GET /events`).
//!
//! The events are shaped as an agent SDK streams them: a user message is
//! one `message.completed` carrying its text; an assistant message is a
//! `message.created`, many `message_part.updated` with a `delta` of a few
//! words each, and a `message.completed`. The log may end inside a message,
//! as a live one does.

use super::Bounds;
use crate::{
    client::{Call, Conn, Endpoint},
    stats::Latency,
};
use anyhow::{Context, Result, bail};
use hyper::Method;
use serde_json::{Value, json};
use stasis_domain::{
    conversation::{Budget, rebuild},
    event_log::Event,
};
use std::{sync::Arc, time::Instant};

/// Events in the rebuild workload.
pub const EVENTS: usize = 10_000;
/// The rebuild's budget: every turn of the log fits.
pub const MAX_TURNS: u32 = 1_000;
/// The rebuild's token budget.
pub const MAX_TOKENS: u64 = 1_000_000;

/// The same budget for the in-process rebuild.
const BUDGET: Budget = Budget {
    max_turns: MAX_TURNS,
    max_tokens: MAX_TOKENS,
};

/// Events per append while filling (under the 1,000-event batch limit).
const FILL_BATCH: usize = 500;
/// Words a delta may carry.
const WORDS: &[&str] = &[
    "the",
    "migration",
    "touches",
    "three",
    "crates;",
    "I",
    "will",
    "start",
    "with",
    "the",
    "domain",
    "rules,",
    "then",
    "wire",
    "the",
    "host",
    "adapter",
    "and",
    "run",
    "cargo",
    "test",
    "--workspace.",
    "Done:",
    "all",
    "green",
    "except",
    "one",
    "flaky",
    "SSE",
    "case,",
    "which",
    "I",
    "am",
    "looking",
    "at",
    "now.",
    "`fn",
    "rebuild(events:",
    "&[Event])`",
    "keeps",
    "order.",
];

/// A stream of message events: `(type, data)` in log order.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The events.
    pub events: Vec<(String, String)>,
    /// Messages in it (user and assistant).
    pub messages: usize,
}

/// `count` events of a conversation between a user and an agent, the same
/// in every run: exchanges of one user message and one streamed assistant
/// message of 10 to 70 deltas, until `count` events.
pub fn stream(count: usize, session: &str) -> Stream {
    let mut events = Vec::with_capacity(count);
    let mut messages = 0;
    let mut word = 0usize;
    let mut next_words = |n: usize| -> String {
        let text: Vec<&str> = (0..n)
            .map(|k| WORDS[(word + k * 7) % WORDS.len()])
            .collect();
        word += n;
        format!("{} ", text.join(" "))
    };
    let mut exchange = 0usize;
    while events.len() < count {
        exchange += 1;
        let user = format!("msg_u{exchange:05}");
        let text = format!("Step {exchange}: {}", next_words(12).trim_end());
        events.push((
            "message.completed".to_owned(),
            json!({
                "info": {"id": user, "role": "user", "sessionID": session},
                "part": {"id": format!("prt_u{exchange:05}"), "messageID": user, "type": "text", "text": text},
            })
            .to_string(),
        ));
        messages += 1;
        if events.len() + 2 > count {
            break;
        }
        let reply = format!("msg_a{exchange:05}");
        events.push((
            "message.created".to_owned(),
            json!({
                "info": {"id": reply, "role": "assistant", "sessionID": session, "modelID": "claude-sonnet-4-5"},
            })
            .to_string(),
        ));
        messages += 1;
        let deltas = 10 + (exchange * 37) % 61;
        for k in 0..deltas {
            if events.len() >= count {
                break;
            }
            events.push((
                "message_part.updated".to_owned(),
                json!({
                    "part": {"id": format!("prt_a{exchange:05}"), "messageID": reply, "type": "text"},
                    "delta": next_words(3 + k % 6),
                })
                .to_string(),
            ));
        }
        if events.len() < count {
            events.push((
                "message.completed".to_owned(),
                json!({"info": {"id": reply, "role": "assistant", "sessionID": session}})
                    .to_string(),
            ));
        }
    }
    Stream { events, messages }
}

/// Appends `stream` to the agent at `agent_path` in session `session`.
pub async fn fill(
    endpoint: &Arc<Endpoint>,
    agent_path: &str,
    stream: &Stream,
    session: &str,
) -> Result<()> {
    let mut conn = Conn::open(endpoint).await?;
    for chunk in stream.events.chunks(FILL_BATCH) {
        let mut body = String::from("{\"events\":[");
        for (index, (kind, data)) in chunk.iter().enumerate() {
            if index > 0 {
                body.push(',');
            }
            body.push_str(&format!(
                "{{\"type\":\"{kind}\",\"session_id\":\"{session}\",\"data\":{data}}}"
            ));
        }
        body.push_str("]}");
        let call = Call::json(Method::POST, format!("{agent_path}/events"), body.into());
        conn.expect_ok(&call).await?;
    }
    Ok(())
}

/// What the rebuilds measured.
#[derive(Debug, Clone, Copy)]
pub struct Rebuilds {
    /// Events in the log.
    pub events: usize,
    /// Turns the rebuild returned.
    pub turns: usize,
    /// `GET /conversation?max_turns=1000&max_tokens=1000000`.
    pub rebuild: Latency,
    /// The same rebuild in-process (`stasis_domain::conversation::rebuild`
    /// over the parsed events): the rule's own cost, without storage or
    /// HTTP.
    pub in_process: Latency,
}

/// Rounds of `GET /conversation` of the agent at `agent_path`, which holds
/// exactly `stream`, each followed by the same rebuild in-process. First,
/// not counted: one `GET /events` of the whole log and one rebuild, whose
/// turns must equal the domain's own rebuild of those events. The timed
/// rebuilds check their body's length only. (The plain read of the same
/// events is [`catchup::reads`](super::catchup::reads).)
pub async fn rebuilds(
    endpoint: &Arc<Endpoint>,
    agent_path: &str,
    stream: &Stream,
    bounds: Bounds,
) -> Result<Rebuilds> {
    let mut conn = Conn::open(endpoint).await?;
    let conversation = Call::get(format!(
        "{agent_path}/conversation?max_turns={MAX_TURNS}&max_tokens={MAX_TOKENS}"
    ));
    let read = Call::get(format!(
        "{agent_path}/events?after=0&limit={}",
        stream.events.len()
    ));
    let events = read_events(&conn.expect_ok(&read).await?, stream.events.len())?;
    let budget = BUDGET;
    let expected = serde_json::to_value(&rebuild(&events, &budget).turns)?;
    let first = conn.expect_ok(&conversation).await?;
    let rebuilt: Value = serde_json::from_slice(&first)?;
    if rebuilt.get("turns") != Some(&expected) {
        bail!("GET /conversation differs from the domain's rebuild of the same events");
    }
    if rebuilt.get("omitted_turns").and_then(Value::as_u64) != Some(0) {
        bail!(
            "GET /conversation omitted turns: {}",
            rebuilt["omitted_turns"]
        );
    }
    let turns = expected.as_array().map_or(0, Vec::len);
    if turns != stream.messages {
        bail!(
            "{} messages were streamed, the rebuild has {turns} turns",
            stream.messages
        );
    }
    let length = first.len();

    let deadline = Instant::now() + bounds.time;
    let (mut rebuild_samples, mut local_samples) = (Vec::new(), Vec::new());
    while (rebuild_samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let start = Instant::now();
        let body = conn.expect_ok(&conversation).await?;
        rebuild_samples.push(start.elapsed());
        if body.len() != length {
            bail!(
                "GET /conversation answered {length} then {} bytes",
                body.len()
            );
        }
        let start = Instant::now();
        let local = rebuild(&events, &budget);
        local_samples.push(start.elapsed());
        if local.turns.len() != turns {
            bail!("the in-process rebuild changed between rounds");
        }
    }
    Ok(Rebuilds {
        events: events.len(),
        turns,
        rebuild: Latency::of(rebuild_samples).context("no rebuild finished")?,
        in_process: Latency::of(local_samples).context("no rebuild finished")?,
    })
}

/// The events of one `GET /events` page, which must be all `expected` of
/// them.
fn read_events(body: &[u8], expected: usize) -> Result<Vec<Event>> {
    let page: Value = serde_json::from_slice(body).context("GET /events did not answer JSON")?;
    if page.get("has_more").and_then(Value::as_bool) != Some(false) {
        bail!("GET /events of {expected} events took more than one page");
    }
    let events = page
        .get("events")
        .and_then(Value::as_array)
        .context("GET /events has no `events`")?;
    if events.len() != expected {
        bail!(
            "GET /events returned {} events, expected {expected}",
            events.len()
        );
    }
    events
        .iter()
        .map(|event| {
            Ok(Event {
                seq: event["seq"].as_u64().context("an event without seq")?,
                event_type: event["type"].as_str().unwrap_or_default().to_owned(),
                session_id: event["session_id"].as_str().map(str::to_owned),
                data: event["data"].to_string(),
                created_at_ms: event["created_at"].as_i64().unwrap_or_default(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_has_the_count_asked_and_rebuilds_into_its_messages() {
        let stream = stream(1000, "s");
        assert_eq!(stream.events.len(), 1000);
        let events: Vec<Event> = (1..)
            .zip(&stream.events)
            .map(|(seq, (kind, data))| Event {
                seq,
                event_type: kind.clone(),
                session_id: Some("s".into()),
                data: data.clone(),
                created_at_ms: 0,
            })
            .collect();
        let turns = rebuild(&events, &BUDGET).turns;
        assert_eq!(turns.len(), stream.messages);
        assert_eq!(turns[0].role, "user");
        assert_eq!(turns[1].role, "assistant");
        assert!(
            turns[1].content.split(' ').count() > 20,
            "{}",
            turns[1].content
        );
    }
}
