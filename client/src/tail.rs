//! Following an agent's event log live over Server-Sent Events, reconnecting with
//! `Last-Event-ID` (and backoff) whenever the stream drops.

use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::{AgentRef, check_id};
use crate::retry::{self, Attempt, Backoff, RetryNotice};
use crate::sse::{SseEvent, SseParser};

/// A connection that lived this long counts as healthy: the backoff starts over after it.
const HEALTHY_CONNECTION: Duration = Duration::from_secs(30);

/// What to follow.
#[derive(Debug, Clone)]
pub struct TailOptions {
    /// Start after this seq (exclusive; 0 for the whole log still kept).
    pub after: u64,
    /// Only this session's events.
    pub session_id: Option<String>,
    /// Only events of this type.
    pub event_type: Option<String>,
    /// Reconnect when nothing (not even the server's 15 s keep-alive) arrives for this long.
    pub idle_timeout: Duration,
}

impl Default for TailOptions {
    fn default() -> Self {
        TailOptions {
            after: 0,
            session_id: None,
            event_type: None,
            idle_timeout: Duration::from_secs(45),
        }
    }
}

/// One event as it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailEvent {
    /// Its seq (the SSE id), when it had one.
    pub seq: Option<u64>,
    /// Its JSON text (`{seq, type, session_id, data, created_at}`).
    pub json: String,
}

/// Where the next connection resumes.
#[derive(Debug)]
struct Cursor {
    after: u64,
    last_id: Option<String>,
}

impl Cursor {
    /// Moves past `event` (its id is a seq: the cursor never goes back) and answers it.
    fn advance(&mut self, event: SseEvent) -> TailEvent {
        let seq: Option<u64> = event.id.as_deref().and_then(|id| id.parse().ok());
        if let Some(seq) = seq {
            self.after = self.after.max(seq);
        }
        self.last_id = event.id;
        TailEvent {
            seq,
            json: event.data,
        }
    }
}

enum Ended {
    /// The callback asked to stop.
    Stopped,
    /// The stream ended or broke; `healthy` when it lived long or delivered events.
    Dropped { healthy: bool, error: Error },
}

/// Follows `agent`'s events, calling `on_event` for each, until `on_event` breaks or the stream
/// cannot be reopened within the client's retry policy (which restarts after every healthy
/// connection). A refusal (401, 403, 404, 410 `cursor_expired`, ...) ends it at once.
pub fn tail(
    client: &Client,
    agent: &AgentRef,
    options: &TailOptions,
    on_event: &mut dyn FnMut(&TailEvent) -> ControlFlow<()>,
) -> Result<()> {
    if let Some(session) = &options.session_id {
        check_id("session", session)?;
    }
    let what = format!("GET {} (event stream)", agent.path("/events"));
    let mut cursor = Cursor {
        after: options.after,
        last_id: None,
    };
    let mut started = Instant::now();
    let policy = client.policy().clone();
    let mut backoff = Backoff::new(&policy, started, None);
    loop {
        let attempt = follow_once(client, agent, options, &mut cursor, &what, on_event);
        let (error, retry_after, healthy) = match attempt {
            Ok(Ended::Stopped) => return Ok(()),
            Ok(Ended::Dropped { healthy, error }) => (error, None, healthy),
            Err(Attempt::Retry { error, retry_after }) => (*error, retry_after, false),
            Err(Attempt::Fail(error)) => return Err(*error),
        };
        if healthy {
            started = Instant::now();
            backoff = Backoff::new(&policy, started, None);
        }
        let attempts = backoff.attempts();
        let Some(delay) = backoff.next_delay(retry_after, retry::jitter(), Instant::now()) else {
            return Err(Error::GaveUp {
                what,
                attempts,
                elapsed: started.elapsed(),
                last: Box::new(error),
            });
        };
        client.notify_retry(&RetryNotice {
            what: &what,
            attempt: attempts,
            delay,
            error: &error,
        });
        std::thread::sleep(delay);
    }
}

/// One connection: open it, deliver its events, and say how it ended.
fn follow_once(
    client: &Client,
    agent: &AgentRef,
    options: &TailOptions,
    cursor: &mut Cursor,
    what: &str,
    on_event: &mut dyn FnMut(&TailEvent) -> ControlFlow<()>,
) -> Result<Ended, Attempt> {
    let response = open(client, agent, options, cursor, what)?;
    let connected = Instant::now();
    let mut delivered = false;
    let mut parser = SseParser::new();
    let mut reader = BufReader::new(response.into_body().into_reader());
    let mut line = Vec::new();
    let error = loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => {
                break Error::Protocol {
                    what: what.to_owned(),
                    detail: "the server ended the stream".into(),
                };
            }
            Ok(_) => {}
            Err(e) => {
                break Error::Transport {
                    what: what.to_owned(),
                    source: ureq::Error::Io(e),
                };
            }
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(event) = parser.feed(text.trim_end_matches(['\n', '\r'])) {
            delivered = true;
            if on_event(&cursor.advance(event)).is_break() {
                return Ok(Ended::Stopped);
            }
        }
    };
    Ok(Ended::Dropped {
        healthy: delivered || connected.elapsed() >= HEALTHY_CONNECTION,
        error,
    })
}

/// The stream's request, resuming past the cursor.
fn open(
    client: &Client,
    agent: &AgentRef,
    options: &TailOptions,
    cursor: &Cursor,
    what: &str,
) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
    let url = client.config().url(&agent.path("/events"));
    let mut request = client
        .prepare(client.agent().get(url), None)?
        .config()
        .timeout_per_read(Some(options.idle_timeout))
        .build()
        .header("Accept", "text/event-stream")
        .query("after", cursor.after.to_string());
    if let Some(session) = &options.session_id {
        request = request.query("session_id", session);
    }
    if let Some(kind) = &options.event_type {
        request = request.query("type", kind);
    }
    if let Some(id) = &cursor.last_id {
        request = request.header("Last-Event-ID", id.as_str());
    }
    let response = request.call().map_err(|e| http::transport(what, e))?;
    http::check_status(what, response)
}
