//! Delivering the inbox while the runtime runs: a thread follows the agent's log over
//! Server-Sent Events (only user messages, resuming from a cursor) and delivers each new
//! message into the session as it is appended, once and in order ([`super::inbox`]).
//!
//! The stream is read with a short per-read timeout so that a stop request is seen within
//! [`STOP_CHECK`] even while the log is quiet; a quiet stream is not an error (stasis sends a
//! keep-alive every 15 s). A message whose delivery fails (the runtime restarting, stasis
//! unreachable) is tried again, in order, until it goes or the follower is stopped.

use std::io::{self, BufRead, BufReader, ErrorKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::agent_log::LogEvent;
use super::inbox::{self, Inbox, InboxMessage, USER_MESSAGE_EVENT};
use super::kilo_api::Kilo;
use super::once::Target;
use crate::error::{Error, Result};
use crate::http::{self, Client};
use crate::ids::{AgentRef, check_id};
use crate::retry::Attempt;
use crate::sidecar::Log;
use crate::sse::SseParser;

/// How often a quiet stream checks for a stop request.
pub const STOP_CHECK: Duration = Duration::from_millis(500);
/// The longest pause between two attempts after a failure.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The running follower; [`InboxFollower::stop`] (or dropping it) ends it.
pub struct InboxFollower {
    stop: Arc<AtomicBool>,
    delivered: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl InboxFollower {
    /// Messages delivered (sent into the runtime) so far.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    /// Whether the thread still runs (it ends on a stop, or on a refusal it cannot get past).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Asks the thread to stop and waits for it (about [`STOP_CHECK`], or the delivery in
    /// progress).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for InboxFollower {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Starts following `agent`'s inbox into `session` of the runtime at `runtime_url`, from the
/// log's seq `after` ([`super::ResumeOutcome::inbox_cursor`]); messages with no recorded
/// delivery at or before it are delivered first. `log` gets a line per delivery and failure.
pub fn follow_inbox(
    client: &Client,
    agent: &AgentRef,
    runtime_url: &str,
    session: &str,
    after: u64,
    log: Log,
) -> Result<InboxFollower> {
    check_id("session", session)?;
    let follower = Follower {
        client: client.clone(),
        agent: agent.clone(),
        kilo: Kilo::new(runtime_url)?,
        session: session.to_owned(),
        log,
        stop: Arc::new(AtomicBool::new(false)),
        delivered: Arc::new(AtomicU64::new(0)),
        newest_id: None,
    };
    let (stop, delivered) = (follower.stop.clone(), follower.delivered.clone());
    let thread = thread::Builder::new()
        .name(format!("inbox-{}", agent.agent()))
        .spawn(move || follower.run(after))
        .map_err(|e| Error::Io {
            context: "starting the inbox follower's thread".into(),
            source: e,
        })?;
    Ok(InboxFollower {
        stop,
        delivered,
        thread: Some(thread),
    })
}

struct Follower {
    client: Client,
    agent: AgentRef,
    kilo: Kilo,
    session: String,
    log: Log,
    stop: Arc<AtomicBool>,
    delivered: Arc<AtomicU64>,
    /// The id of the last message sent, which the next one must sort after.
    newest_id: Option<String>,
}

/// How one connection ended.
enum Ended {
    Stopped,
    /// Broken or refused: reconnect after a pause (the backoff starts over when the
    /// connection was `healthy`: it delivered something).
    Dropped {
        error: Error,
        healthy: bool,
    },
    /// A refusal that no retry gets past.
    Refused(Error),
}

impl Follower {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn say(&self, line: &str) {
        (self.log)(&format!("inbox {}: {line}", self.agent));
    }

    /// Sleeps `pause` in short steps; answers whether a stop came meanwhile.
    fn pause(&self, pause: Duration) -> bool {
        let mut left = pause;
        while !left.is_zero() && !self.stopped() {
            let step = left.min(STOP_CHECK);
            thread::sleep(step);
            left -= step;
        }
        self.stopped()
    }

    fn run(mut self, after: u64) {
        let Some(mut inbox) = self.read_inbox() else {
            return;
        };
        let mut pending: Vec<InboxMessage> = inbox
            .undelivered()
            .into_iter()
            .filter(|m| m.seq <= after)
            .cloned()
            .collect();
        let mut cursor = after;
        let mut backoff = Duration::from_millis(100);
        while !self.stopped() {
            if !self.deliver_pending(&mut inbox, &mut pending) {
                if self.pause(backoff) {
                    return;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            match self.follow_once(&mut inbox, &mut pending, &mut cursor) {
                Ended::Stopped => return,
                Ended::Refused(error) => {
                    self.say(&format!("stopped following: {error}"));
                    return;
                }
                Ended::Dropped { error, healthy } => {
                    if healthy {
                        backoff = Duration::from_millis(100);
                    }
                    self.say(&format!("the stream dropped ({error}); reconnecting"));
                    if self.pause(backoff) {
                        return;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// The inbox's records, read again until they can be (or a stop comes).
    fn read_inbox(&self) -> Option<Inbox> {
        let mut backoff = Duration::from_millis(100);
        loop {
            match Inbox::read(&self.client, &self.agent) {
                Ok(inbox) => return Some(inbox),
                Err(error) => self.say(&format!("reading the inbox failed: {error}")),
            }
            if self.pause(backoff) {
                return None;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Delivers what waits, in order; answers false when one failed (it stays first).
    fn deliver_pending(&mut self, inbox: &mut Inbox, pending: &mut Vec<InboxMessage>) -> bool {
        while let Some(message) = pending.first().cloned() {
            let target = Target {
                client: &self.client,
                agent: &self.agent,
                kilo: &self.kilo,
                session: &self.session,
            };
            let started = Instant::now();
            match inbox::deliver(&target, inbox, &message, None, self.newest_id.as_deref()) {
                Ok(delivery) => {
                    pending.remove(0);
                    if delivery.sent {
                        self.delivered.fetch_add(1, Ordering::Relaxed);
                        self.say(&format!(
                            "delivered seq {} as {} (decided and sent in {} µs, of which the \
                             runtime accepting it {} µs)",
                            delivery.seq,
                            delivery.message_id,
                            started.elapsed().as_micros(),
                            delivery.runtime_took.as_micros()
                        ));
                    }
                    self.newest_id = Some(delivery.message_id);
                }
                Err(error) => {
                    self.say(&format!("delivering seq {} failed: {error}", message.seq));
                    return false;
                }
            }
        }
        true
    }

    /// One connection: every new user message is delivered as it comes.
    fn follow_once(
        &mut self,
        inbox: &mut Inbox,
        pending: &mut Vec<InboxMessage>,
        cursor: &mut u64,
    ) -> Ended {
        let what = format!("GET {} (inbox stream)", self.agent.path("/events"));
        let response = match self.open(*cursor, &what) {
            Ok(response) => response,
            Err(Attempt::Retry { error, .. }) => {
                return Ended::Dropped {
                    error: *error,
                    healthy: false,
                };
            }
            Err(Attempt::Fail(error)) => return self.refused(*error, cursor),
        };
        let mut reader = BufReader::new(response.into_body().into_reader());
        let mut parser = SseParser::new();
        let mut line = Vec::new();
        let mut healthy = false;
        loop {
            if self.stopped() {
                return Ended::Stopped;
            }
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => {
                    let detail = "the server ended the stream".into();
                    let error = Error::Protocol { what, detail };
                    return Ended::Dropped { error, healthy };
                }
                Ok(_) => healthy = true,
                // Quiet: keep what was read of the line, look for a stop, read on (a timed
                // out read leaves ureq's connection as it was).
                Err(e) if is_timeout(&e) => continue,
                Err(e) => {
                    let source = ureq::Error::Io(e);
                    let error = Error::Transport { what, source };
                    return Ended::Dropped { error, healthy };
                }
            }
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            let Some(event) = parser.feed(text.trim_end_matches(['\n', '\r'])) else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<LogEvent>(&event.data) else {
                continue;
            };
            *cursor = (*cursor).max(event.seq);
            if let Some(message) = InboxMessage::from_event(&event)
                && !inbox.delivered.contains_key(&message.seq)
            {
                pending.push(message);
            }
            if !self.deliver_pending(inbox, pending) {
                let detail = "a delivery failed; it is tried again".into();
                let error = Error::Protocol { what, detail };
                return Ended::Dropped { error, healthy };
            }
        }
    }

    /// A refusal: an expired cursor moves to the oldest kept event; the rest end the thread.
    fn refused(&self, error: Error, cursor: &mut u64) -> Ended {
        if let Error::Api {
            status: 410,
            detail: Some(detail),
            ..
        } = &error
            && let Some(first) = detail.get("first_seq").and_then(serde_json::Value::as_u64)
        {
            *cursor = first.saturating_sub(1);
            return Ended::Dropped {
                error,
                healthy: true,
            };
        }
        Ended::Refused(error)
    }

    fn open(&self, after: u64, what: &str) -> Result<ureq::http::Response<ureq::Body>, Attempt> {
        let url = self.client.config().url(&self.agent.path("/events"));
        let request = self
            .client
            .prepare(self.client.agent().get(url), None)?
            .config()
            .timeout_per_read(Some(STOP_CHECK))
            .build()
            .header("Accept", "text/event-stream")
            .query("after", after.to_string())
            .query("type", USER_MESSAGE_EVENT);
        let response = request.call().map_err(|e| http::transport(what, e))?;
        http::check_status(what, response)
    }
}

/// A read that timed out: ureq wraps its own timeout in an I/O error of kind `Other`.
fn is_timeout(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock)
        || error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|e| matches!(e, ureq::Error::Timeout(_)))
}
