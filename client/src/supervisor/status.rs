//! What the runtime is doing, from its own event stream: which session is busy and since when
//! (`session.status` busy/idle), how many turns each session ended (`session.idle`), and the
//! session used last. The turn deadline and the eviction's wait read it; a thread follows the
//! stream (a connection of its own beside the sidecar's) while the runtime lives.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::ids::check_id;
use crate::sse::SseParser;

/// One session's state.
#[derive(Debug, Clone, Default)]
struct SessionState {
    /// Busy since then, or idle.
    busy_since: Option<Instant>,
    /// The turn running now was aborted already.
    aborted: bool,
    /// `session.idle` events seen.
    idles: u64,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, SessionState>,
    last_session: Option<String>,
    connected: bool,
}

/// The shared view (cheap to clone).
#[derive(Debug, Clone, Default)]
pub(crate) struct Status {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    properties: Properties,
}

#[derive(Default, Deserialize)]
struct Properties {
    #[serde(rename = "sessionID", default)]
    session_id: Option<String>,
    #[serde(default)]
    status: Option<StatusType>,
}

#[derive(Deserialize)]
struct StatusType {
    #[serde(rename = "type")]
    kind: String,
}

impl Status {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Applies one event's JSON (`{type, properties}`); anything else is ignored.
    pub(crate) fn apply(&self, data: &str, now: Instant) {
        let Ok(event) = serde_json::from_str::<Envelope>(data) else {
            return;
        };
        let Some(session) = event.properties.session_id else {
            return;
        };
        if check_id("session", &session).is_err() {
            return;
        }
        let mut inner = self.lock();
        let state = inner.sessions.entry(session.clone()).or_default();
        match (event.kind.as_str(), event.properties.status) {
            ("session.status", Some(status)) if status.kind == "idle" => state.busy_since = None,
            ("session.status", Some(_)) if state.busy_since.is_none() => {
                state.busy_since = Some(now);
                state.aborted = false;
            }
            ("session.idle", _) => {
                state.busy_since = None;
                state.idles += 1;
            }
            _ => {}
        }
        inner.last_session = Some(session);
    }

    /// Marks `session` busy now (a prompt was just sent: its `busy` may not have come yet).
    pub(crate) fn mark_busy(&self, session: &str, now: Instant) {
        let mut inner = self.lock();
        let state = inner.sessions.entry(session.to_owned()).or_default();
        state.busy_since.get_or_insert(now);
        inner.last_session = Some(session.to_owned());
    }

    /// The session used last.
    pub(crate) fn last_session(&self) -> Option<String> {
        self.lock().last_session.clone()
    }

    /// Turns ended in `session` so far.
    pub(crate) fn idles(&self, session: &str) -> u64 {
        self.lock().sessions.get(session).map_or(0, |s| s.idles)
    }

    /// Whether `session` is busy.
    pub(crate) fn is_busy(&self, session: &str) -> bool {
        self.lock()
            .sessions
            .get(session)
            .is_some_and(|s| s.busy_since.is_some())
    }

    /// Turns ended (`session.idle`) in every session so far.
    pub(crate) fn turns_ended(&self) -> u64 {
        self.lock().sessions.values().map(|s| s.idles).sum()
    }

    /// Every busy session.
    pub(crate) fn busy_sessions(&self) -> Vec<String> {
        let inner = self.lock();
        let busy = inner
            .sessions
            .iter()
            .filter(|(_, s)| s.busy_since.is_some());
        busy.map(|(id, _)| id.clone()).collect()
    }

    /// Sessions busy for longer than `deadline` and not aborted yet, with how long; each is
    /// marked aborted (a turn is aborted once).
    pub(crate) fn take_overdue(&self, deadline: Duration, now: Instant) -> Vec<(String, Duration)> {
        let mut inner = self.lock();
        let mut overdue = Vec::new();
        for (id, state) in &mut inner.sessions {
            if let Some(since) = state.busy_since {
                let busy_for = now.saturating_duration_since(since);
                if busy_for > deadline && !state.aborted {
                    state.aborted = true;
                    overdue.push((id.clone(), busy_for));
                }
            }
        }
        overdue
    }

    /// True once the follower has opened the stream.
    pub(crate) fn is_connected(&self) -> bool {
        self.lock().connected
    }

    fn set_connected(&self) {
        self.lock().connected = true;
    }
}

/// Follows `{base}/event` into `status` until `alive` is false (reconnecting every 200 ms to 2 s
/// while the runtime lives).
pub(crate) fn follow(base: String, status: Status, alive: Arc<AtomicBool>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(2)))
        // kilo sends a heartbeat about every 10 s: a longer silence is a dead stream.
        .timeout_per_read(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut delay = Duration::from_millis(200);
    while alive.load(Ordering::SeqCst) {
        let response = agent
            .get(format!("{base}/event"))
            .header("Accept", "text/event-stream")
            .call();
        if let Ok(response) = response
            && response.status().is_success()
        {
            status.set_connected();
            delay = Duration::from_millis(200);
            let mut parser = SseParser::new();
            let reader = BufReader::new(response.into_body().into_reader());
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if !alive.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(event) = parser.feed(line.trim_end_matches('\r')) {
                    status.apply(&event.data, Instant::now());
                }
            }
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status_event(session: &str, kind: &str) -> String {
        format!(
            r#"{{"type":"session.status","properties":{{"sessionID":"{session}","status":{{"type":"{kind}"}}}}}}"#
        )
    }

    #[test]
    fn a_turn_busy_past_the_deadline_is_overdue_once() {
        let status = Status::default();
        let t0 = Instant::now();
        status.apply(&status_event("ses_1", "busy"), t0);
        let deadline = Duration::from_secs(5);
        assert!(
            status
                .take_overdue(deadline, t0 + Duration::from_secs(4))
                .is_empty()
        );
        let overdue = status.take_overdue(deadline, t0 + Duration::from_secs(6));
        assert_eq!(overdue, vec![("ses_1".to_owned(), Duration::from_secs(6))]);
        assert!(
            status
                .take_overdue(deadline, t0 + Duration::from_secs(60))
                .is_empty(),
            "aborted once"
        );
        status.apply(
            r#"{"type":"session.idle","properties":{"sessionID":"ses_1"}}"#,
            t0,
        );
        assert!(!status.is_busy("ses_1"));
        assert_eq!(status.idles("ses_1"), 1);
        assert_eq!(status.turns_ended(), 1);
        assert_eq!(status.last_session().as_deref(), Some("ses_1"));
    }

    #[test]
    fn an_idle_status_ends_the_busy_time_and_other_events_are_ignored() {
        let status = Status::default();
        let t0 = Instant::now();
        status.apply(&status_event("ses_1", "busy"), t0);
        status.apply(&status_event("ses_1", "idle"), t0);
        status.apply("not json", t0);
        status.apply(r#"{"type":"server.heartbeat","properties":{}}"#, t0);
        assert!(status.busy_sessions().is_empty());
        assert!(
            status
                .take_overdue(Duration::ZERO, t0 + Duration::from_secs(1))
                .is_empty()
        );
    }
}
