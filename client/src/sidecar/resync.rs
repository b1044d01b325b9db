//! Re-reading the conversation from the runtime's own API where events went missing: the
//! runtime does not replay its event stream, so after a lost stream, a full buffer or a
//! restart the sidecar asks `GET /session` and `GET /session/{id}/message` instead, and
//! forwards each message that changed since the gap began in the shapes the runtime itself
//! streams: `message.updated {sessionID, info}` and one `message.part.updated {sessionID,
//! part, time}` per part. The rebuild takes a part's full text as replacing what was streamed,
//! so sending a full state again is harmless.
//!
//! What comes back: every message created, completed or still unfinished since the gap began
//! (`MARGIN_MS` earlier, for clock slack), with its finished parts, less what the agent's log
//! already holds in that very state (`stored.rs`): a message whose latest stored `info`, or a
//! part whose latest stored state, equals the runtime's is not sent again, so a restarted
//! sidecar stores no copy of what an earlier one (in this container or another) stored. What does not: a text or
//! reasoning part still streaming at that moment (kilo stores its text only when it ends; its
//! final update follows on the stream), and everything that is not a message: session status,
//! `session.idle`, todos, diffs, and removals (`message.removed` of a revert in the gap).

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::event::{Outgoing, encode};
use super::queue::{Gap, Resync, ResyncReason, StreamOpened};
use super::runtime::{MessageWithParts, Runtime};
use super::stored::{Said, StoredLog};
use crate::error::Result;
use crate::ids::check_id;

/// The event that precedes what a resync forwards.
pub const RESYNC_EVENT: &str = "stasis.sidecar.resync";
/// The event that records events dropped while the buffer was full.
pub const GAP_EVENT: &str = "stasis.sidecar.gap";
/// Slack between the runtime's timestamps and the sidecar's.
const MARGIN_MS: u64 = 2_000;

#[derive(Deserialize)]
struct MessageFacts {
    #[serde(default)]
    role: String,
    #[serde(default)]
    time: MessageTime,
    #[serde(default)]
    finish: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct MessageTime {
    created: Option<f64>,
    completed: Option<f64>,
}

#[derive(Deserialize)]
struct PartFacts {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    time: Option<PartTime>,
}

#[derive(Deserialize)]
struct PartTime {
    start: Option<f64>,
    end: Option<f64>,
}

#[derive(Serialize)]
struct MessageUpdated<'a> {
    #[serde(rename = "sessionID")]
    session_id: &'a str,
    info: &'a RawValue,
}

#[derive(Serialize)]
struct PartUpdated<'a> {
    #[serde(rename = "sessionID")]
    session_id: &'a str,
    part: &'a RawValue,
    time: u64,
}

#[derive(Serialize)]
struct ResyncNote<'a> {
    reason: ResyncReason,
    since_ms: u64,
    /// The event stream's opening it follows (absent after a full buffer).
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<StreamOpened>,
    messages: usize,
    parts: usize,
    /// Messages and parts the log already held as they are: not sent again.
    already_stored: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// What a resync forwards, its note first.
#[derive(Debug)]
pub(crate) struct Resent {
    pub(crate) events: Vec<Outgoing>,
    /// Messages and parts re-sent (the note not counted).
    pub(crate) messages: usize,
    pub(crate) parts: usize,
    /// Why reading back failed, if it did (the note says so too).
    pub(crate) error: Option<String>,
}

/// The gap event for `gap`.
pub(crate) fn gap_event(gap: &Gap, now_ms: u64) -> Result<Outgoing, String> {
    let data = serde_json::value::to_raw_value(gap).map_err(|e| e.to_string())?;
    Ok(encode(GAP_EVENT, None, Some(&data), now_ms)?.0)
}

/// Reads back what changed since `resync.since_ms`, drops what `log` already holds, and
/// encodes the rest, note first. A runtime (or a log) that does not answer gives the note
/// alone, with the error.
pub(crate) fn read_back(
    runtime: &Runtime,
    resync: &Resync,
    now_ms: u64,
    log: &dyn StoredLog,
) -> Resent {
    let since = resync.since_ms.saturating_sub(MARGIN_MS);
    let read = changed_messages(runtime, since, now_ms).and_then(|mut changes| {
        let stored = log.stored(&changes.sessions)?;
        changes.drop_stored(|said, value| stored.holds(said, value));
        Ok(changes)
    });
    let (changes, error) = match read {
        Ok(changes) => (changes, None),
        Err(e) => (Changes::default(), Some(e.to_string())),
    };
    let note = ResyncNote {
        reason: resync.reason,
        since_ms: since,
        stream: resync.opened,
        messages: changes.messages,
        parts: changes.parts,
        already_stored: changes.already_stored,
        error: error.as_deref(),
    };
    let mut events = Vec::with_capacity(changes.events.len() + 1);
    if let Ok(data) = serde_json::value::to_raw_value(&note)
        && let Ok((event, _)) = encode(RESYNC_EVENT, None, Some(&data), now_ms)
    {
        events.push(event);
    }
    events.extend(changes.events.into_iter().map(|(event, _)| event));
    Resent {
        events,
        messages: changes.messages,
        parts: changes.parts,
        error,
    }
}

#[derive(Debug, Default)]
struct Changes {
    /// Each event with what it says (the message's `info`, or the part).
    events: Vec<(Outgoing, Option<(Said, serde_json::Value)>)>,
    messages: usize,
    parts: usize,
    /// Sessions the events belong to.
    sessions: Vec<String>,
    already_stored: usize,
}

impl Changes {
    /// Drops the events whose message or part `held` says the log holds as they are.
    fn drop_stored(&mut self, held: impl Fn(&Said, &serde_json::Value) -> bool) {
        let before = self.events.len();
        self.events
            .retain(|(_, said)| !said.as_ref().is_some_and(|(said, value)| held(said, value)));
        let messages = |events: &[(Outgoing, Option<(Said, serde_json::Value)>)]| {
            events
                .iter()
                .filter(|(_, s)| matches!(s, Some((Said::Message(_), _))))
                .count()
        };
        let kept_messages = messages(&self.events);
        self.already_stored = before - self.events.len();
        self.parts = self.events.len() - kept_messages;
        self.messages = kept_messages;
    }
}

fn changed_messages(runtime: &Runtime, since: u64, now_ms: u64) -> Result<Changes> {
    let mut sessions = runtime.sessions()?;
    sessions.retain(|s| {
        check_id("session", &s.id).is_ok() && s.time.updated.is_none_or(|u| u >= since as f64)
    });
    sessions.sort_by(|a, b| {
        a.time
            .updated
            .unwrap_or(0.0)
            .total_cmp(&b.time.updated.unwrap_or(0.0))
    });
    let mut changes = Changes::default();
    for session in sessions {
        let before = changes.events.len();
        for message in runtime.messages(&session.id)? {
            add_message(&mut changes, &session.id, &message, since, now_ms);
        }
        if changes.events.len() > before {
            changes.sessions.push(session.id);
        }
    }
    Ok(changes)
}

/// Adds `message` and its finished parts when it changed since `since`.
fn add_message(
    changes: &mut Changes,
    session_id: &str,
    message: &MessageWithParts,
    since: u64,
    now_ms: u64,
) {
    let Ok(facts) = serde_json::from_str::<MessageFacts>(message.info.get()) else {
        return;
    };
    if !changed_since(&facts, since as f64) {
        return;
    }
    let updated = MessageUpdated {
        session_id,
        info: &message.info,
    };
    if let Some(event) = encoded("message.updated", session_id, &updated, now_ms) {
        let said = said(Said::Message, &message.info);
        changes.events.push((event, said));
        changes.messages += 1;
    }
    for part in message.parts.iter().filter(|p| !still_streaming(p)) {
        let updated = PartUpdated {
            session_id,
            part,
            time: now_ms,
        };
        if let Some(event) = encoded("message.part.updated", session_id, &updated, now_ms) {
            changes.events.push((event, said(Said::Part, part)));
            changes.parts += 1;
        }
    }
}

/// What `raw` says, keyed by its `id` (`None`: no id, always sent).
fn said(key: fn(String) -> Said, raw: &RawValue) -> Option<(Said, serde_json::Value)> {
    let value: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
    let id = value.get("id")?.as_str()?.to_owned();
    Some((key(id), value))
}

fn encoded(kind: &str, session_id: &str, data: &impl Serialize, now_ms: u64) -> Option<Outgoing> {
    let data = serde_json::value::to_raw_value(data).ok()?;
    encode(kind, Some(session_id), Some(&data), now_ms)
        .ok()
        .map(|(event, _)| event)
}

/// Created or completed since `since`, or an assistant message not finished yet.
fn changed_since(facts: &MessageFacts, since: f64) -> bool {
    let time = &facts.time;
    let unfinished = facts.role == "assistant"
        && time.completed.is_none()
        && facts.finish.is_none()
        && facts.error.is_none();
    unfinished
        || time.created.is_some_and(|t| t >= since)
        || time.completed.is_some_and(|t| t >= since)
}

/// A text or reasoning part that started and has not ended: its stored text lags the stream.
fn still_streaming(part: &RawValue) -> bool {
    let Ok(facts) = serde_json::from_str::<PartFacts>(part.get()) else {
        return false;
    };
    matches!(facts.kind.as_str(), "text" | "reasoning")
        && facts
            .time
            .is_some_and(|t| t.start.is_some() && t.end.is_none())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use serde_json::Value;

    use super::*;

    fn message(info: &str, parts: &[&str]) -> MessageWithParts {
        let raw = |text: &str| serde_json::from_str::<Box<RawValue>>(text).expect("raw JSON");
        MessageWithParts {
            info: raw(info),
            parts: parts.iter().map(|p| raw(p)).collect(),
        }
    }

    fn resent(message: &MessageWithParts, since: u64) -> Vec<Value> {
        let mut changes = Changes::default();
        add_message(&mut changes, "ses_1", message, since, 99);
        changes
            .events
            .iter()
            .map(|(e, _)| serde_json::from_str(e.json.get()).expect("JSON"))
            .collect()
    }

    #[test]
    fn a_message_from_the_gap_comes_back_in_the_runtimes_own_shapes() {
        let user = message(
            r#"{"id":"m1","sessionID":"ses_1","role":"user","time":{"created":1500}}"#,
            &[r#"{"id":"p1","messageID":"m1","type":"text","text":"hello"}"#],
        );
        let events = resent(&user, 1000);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0]["type"], "message.updated");
        assert_eq!(events[0]["session_id"], "ses_1");
        assert_eq!(events[0]["data"]["info"]["id"], "m1");
        assert_eq!(events[0]["data"]["sessionID"], "ses_1");
        assert_eq!(events[1]["type"], "message.part.updated");
        assert_eq!(events[1]["data"]["part"]["text"], "hello");
        assert_eq!(events[1]["data"]["time"], 99);
    }

    #[test]
    fn messages_finished_before_the_gap_are_not_sent_again() {
        let old_user = message(r#"{"id":"m","role":"user","time":{"created":500}}"#, &[]);
        let old_reply = message(
            r#"{"id":"a","role":"assistant","time":{"created":600,"completed":900}}"#,
            &[],
        );
        assert!(resent(&old_user, 1000).is_empty());
        assert!(resent(&old_reply, 1000).is_empty());
    }

    #[test]
    fn a_reply_finished_or_still_running_in_the_gap_is_sent_again() {
        let finished_in_gap = message(
            r#"{"id":"a","role":"assistant","time":{"created":600,"completed":1200}}"#,
            &[r#"{"id":"t","type":"text","text":"done","time":{"start":700,"end":1200}}"#],
        );
        assert_eq!(resent(&finished_in_gap, 1000).len(), 2);
        let running = message(
            r#"{"id":"a","role":"assistant","time":{"created":600}}"#,
            &[
                r#"{"id":"s","type":"step-start"}"#,
                r#"{"id":"c","type":"tool","tool":"bash","state":{"status":"completed"}}"#,
                r#"{"id":"t","type":"text","text":"","time":{"start":700}}"#,
            ],
        );
        let events = resent(&running, 1000);
        let parts: Vec<&str> = events
            .iter()
            .filter_map(|e| e["data"]["part"]["id"].as_str())
            .collect();
        assert_eq!(
            parts,
            ["s", "c"],
            "the streaming text part is left to the stream"
        );
        let failed = message(
            r#"{"id":"a","role":"assistant","time":{"created":600},"error":{"name":"x"}}"#,
            &[],
        );
        assert!(
            resent(&failed, 1000).is_empty(),
            "an error finishes a reply"
        );
    }

    #[test]
    fn what_the_log_holds_as_it_is_is_not_sent_again() {
        let reply = message(
            r#"{"id":"a","role":"assistant","time":{"created":600}}"#,
            &[
                r#"{"id":"c","type":"tool","tool":"bash","state":{"status":"completed"}}"#,
                r#"{"id":"d","type":"tool","tool":"bash","state":{"status":"running"}}"#,
            ],
        );
        let mut changes = Changes::default();
        add_message(&mut changes, "ses_1", &reply, 1000, 99);
        let mut stored = crate::sidecar::stored::Stored::default();
        // The log holds the message as it is and part `c` as it is; part `d` in an older state.
        for data in [
            r#"{"info":{"id":"a","role":"assistant","time":{"created":600}}}"#,
            r#"{"part":{"id":"c","type":"tool","tool":"bash","state":{"status":"completed"}}}"#,
            r#"{"part":{"id":"d","type":"tool","tool":"bash","state":{"status":"pending"}}}"#,
        ] {
            stored.record(&serde_json::from_str(data).expect("JSON"));
        }
        changes.drop_stored(|said, value| stored.holds(said, value));
        let sent: Vec<Value> = changes
            .events
            .iter()
            .map(|(e, _)| serde_json::from_str(e.json.get()).expect("JSON"))
            .collect();
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["data"]["part"]["id"], "d");
        assert_eq!(
            (changes.messages, changes.parts, changes.already_stored),
            (0, 1, 2)
        );
    }

    #[test]
    fn a_gap_event_carries_the_counts_and_the_time_range() {
        let gap = Gap {
            dropped_events: 3,
            dropped_bytes: 120,
            from_ms: 10,
            to_ms: 20,
        };
        let event = gap_event(&gap, 30).expect("encodes");
        let value: Value = serde_json::from_str(event.json.get()).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"type": GAP_EVENT, "data": {
                "dropped_events": 3, "dropped_bytes": 120, "from_ms": 10, "to_ms": 20}})
        );
    }
}
