//! The inbox: user messages stasis appended to the agent's log (`POST /mayor/message`, and
//! the same for any agent), delivered into the runtime's session exactly once and in order.
//!
//! Each delivery is decided in the log first ([`DELIVERED_EVENT`]: the message's seq, the
//! session, kilo's message id; stamped `stasis.inbox.<seq>`), then acted on with that id, so a
//! crash in between is finished by the next start ([`super::once`]) and a second decision
//! appends nothing and keeps the first.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::agent_log::{self, LogEvent, NewEvent};
use super::kilo_api::{KiloMessage, new_message_id};
use super::once::{self, Sent, Target};
use crate::error::Result;

/// The type of the user messages stasis writes (`stasis_domain::recall::USER_MESSAGE_EVENT`).
pub const USER_MESSAGE_EVENT: &str = "message.completed";
/// The record of a delivery, appended before it is made.
pub const DELIVERED_EVENT: &str = "stasis.inbox.delivered";
/// How a message went in: as its own prompt.
pub(crate) const VIA_MESSAGE: &str = "message";
/// How a message went in: inside a new session's dispatch prompt.
pub(crate) const VIA_PROMPT: &str = "dispatch_prompt";

/// One message for the agent, as its log holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxMessage {
    /// Its seq in the agent's log.
    pub seq: u64,
    /// Its text.
    pub text: String,
}

impl InboxMessage {
    /// The user message in `event`, if it is one (`{info: {role: "user"}, part: {text}}`).
    pub(crate) fn from_event(event: &LogEvent) -> Option<Self> {
        #[derive(Deserialize)]
        struct Data {
            info: Info,
            part: Part,
        }
        #[derive(Deserialize)]
        struct Info {
            role: String,
        }
        #[derive(Deserialize)]
        struct Part {
            text: String,
        }
        if event.kind != USER_MESSAGE_EVENT {
            return None;
        }
        let data: Data = event.data_as()?;
        let said = data.info.role == "user" && !data.part.text.trim().is_empty();
        said.then_some(InboxMessage {
            seq: event.seq,
            text: data.part.text,
        })
    }
}

/// A delivery as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    /// The message's seq.
    pub seq: u64,
    /// The runtime session it went into.
    pub session_id: String,
    /// kilo's id of the user message that carried it.
    pub message_id: String,
    /// [`VIA_MESSAGE`] or [`VIA_PROMPT`].
    pub via: String,
    /// How many times it was decided before under another id, which never arrived and no
    /// longer sorted last when it was to be sent again.
    #[serde(default)]
    pub attempt: u32,
}

/// The inbox as the log shows it: every message, and every recorded delivery by seq.
#[derive(Debug, Default)]
pub(crate) struct Inbox {
    pub(crate) messages: Vec<InboxMessage>,
    pub(crate) delivered: BTreeMap<u64, (u64, Delivered)>,
    /// The log's newest seq when it was read: a follower goes on from there.
    pub(crate) read_up_to: u64,
}

impl Inbox {
    /// Reads the messages and the deliveries from the agent's log.
    pub(crate) fn read(client: &crate::Client, agent: &crate::AgentRef) -> Result<Self> {
        let delivered = agent_log::events_of_type(client, agent, DELIVERED_EVENT, 0, None)?;
        let messages = agent_log::events_of_type(client, agent, USER_MESSAGE_EVENT, 0, None)?;
        let mut inbox = Inbox {
            read_up_to: messages.last_seq,
            ..Inbox::default()
        };
        for event in &delivered.events {
            inbox.remember(event.seq, event.data_as());
        }
        inbox.messages = messages
            .events
            .iter()
            .filter_map(InboxMessage::from_event)
            .collect();
        Ok(inbox)
    }

    /// Keeps the first record of each message's latest attempt.
    pub(crate) fn remember(&mut self, decided_at: u64, record: Option<Delivered>) {
        let Some(record) = record else {
            return;
        };
        match self.delivered.get(&record.seq) {
            Some((_, known)) if known.attempt >= record.attempt => {}
            _ => {
                self.delivered.insert(record.seq, (decided_at, record));
            }
        }
    }

    /// The messages with no recorded delivery, in log order.
    pub(crate) fn undelivered(&self) -> Vec<&InboxMessage> {
        self.messages
            .iter()
            .filter(|m| !self.delivered.contains_key(&m.seq))
            .collect()
    }

    /// What the session is owed, in log order: the messages with no recorded delivery, and
    /// those recorded into `session` as their own message (each may still have to be sent: a
    /// crash came between the record and the send).
    pub(crate) fn owed_to(&self, session: &str) -> Vec<&InboxMessage> {
        self.messages
            .iter()
            .filter(|m| match self.delivered.get(&m.seq) {
                None => true,
                Some((_, record)) => record.session_id == session && record.via == VIA_MESSAGE,
            })
            .collect()
    }
}

/// The producer id of a message's delivery (its stamp's seq is the attempt).
pub(crate) fn producer_id(seq: u64) -> String {
    format!("stasis.inbox.{seq}")
}

/// What a delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The message's seq.
    pub seq: u64,
    /// kilo's message id.
    pub message_id: String,
    /// Sent now (`false`: it had arrived already).
    pub sent: bool,
    /// How long the runtime took to accept the message (its `prompt_async`): the runtime's
    /// own share of a delivery decided now (zero when an earlier decision was completed).
    pub runtime_took: Duration,
}

/// Decides and makes the delivery of `message` into the target's session, once. `known` is
/// kilo's view of the session (for the new id's order and the arrival check; `None` reads it
/// when needed); `newest_id` a message id the new one must sort after (the previous delivery's).
pub(crate) fn deliver(
    target: &Target<'_>,
    inbox: &mut Inbox,
    message: &InboxMessage,
    known: Option<&[KiloMessage]>,
    newest_id: Option<&str>,
) -> Result<Delivery> {
    let mut attempt = 0;
    if let Some((at, record)) = inbox.delivered.get(&message.seq).cloned() {
        match finish(target, known, &record, message, at)? {
            Some(done) => return Ok(done),
            None => attempt = record.attempt + 1,
        }
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let existing = known
        .into_iter()
        .flatten()
        .map(|m| m.info.id.as_str())
        .chain(newest_id);
    let seed = format!("{}:inbox:{}:{attempt}", target.agent, message.seq);
    let record = Delivered {
        seq: message.seq,
        session_id: target.session.to_owned(),
        message_id: new_message_id(existing, now_ms, &seed),
        via: VIA_MESSAGE.to_owned(),
        attempt,
    };
    let event = NewEvent::new(DELIVERED_EVENT, target.session, &record)?;
    let producer = producer_id(message.seq);
    let decided = agent_log::append_decision::<Delivered>(
        target.client,
        target.agent,
        (&producer, attempt),
        &[event],
    )?;
    if let Some(earlier) = decided.earlier {
        // Decided meanwhile elsewhere: act on that decision (sent even if stale, to end here).
        inbox.remember(decided.seq, Some(earlier.clone()));
        let done = finish(target, known, &earlier, message, decided.seq)?;
        return match done {
            Some(done) => Ok(done),
            None => send(target, earlier, message),
        };
    }
    inbox.remember(decided.seq, Some(record.clone()));
    // Decided just now, under an id minted just now: kilo cannot hold it yet.
    send(target, record, message)
}

fn send(target: &Target<'_>, record: Delivered, message: &InboxMessage) -> Result<Delivery> {
    let started = Instant::now();
    target
        .kilo
        .prompt(target.session, &record.message_id, &message.text)?;
    Ok(Delivery {
        seq: message.seq,
        message_id: record.message_id,
        sent: true,
        runtime_took: started.elapsed(),
    })
}

/// Acts on a recorded delivery: sent when it went into this session as its own message and
/// has not arrived; otherwise (another session, or a dispatch prompt) it is done. `None`: its
/// id is stale (see [`once::Sent::Stale`]) and it must be decided again.
fn finish(
    target: &Target<'_>,
    known: Option<&[KiloMessage]>,
    record: &Delivered,
    message: &InboxMessage,
    decided_at: u64,
) -> Result<Option<Delivery>> {
    let sent = if record.session_id == target.session && record.via == VIA_MESSAGE {
        match once::send_once(target, known, &record.message_id, &message.text, decided_at)? {
            Sent::Now => true,
            Sent::Before => false,
            Sent::Stale => return Ok(None),
        }
    } else {
        false
    };
    Ok(Some(Delivery {
        seq: message.seq,
        message_id: record.message_id.clone(),
        sent,
        runtime_took: Duration::ZERO,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, data: &str) -> LogEvent {
        LogEvent {
            seq,
            kind: kind.into(),
            data: serde_json::value::RawValue::from_string(data.into()).expect("json"),
        }
    }

    fn user(seq: u64, text: &str) -> LogEvent {
        let data = format!(
            r#"{{"info":{{"id":"stasis-user-{seq}","role":"user"}},"part":{{"id":"p","text":"{text}"}}}}"#
        );
        event(seq, USER_MESSAGE_EVENT, &data)
    }

    fn record(seq: u64, session: &str, via: &str) -> Delivered {
        Delivered {
            seq,
            session_id: session.into(),
            message_id: format!("msg_{seq}"),
            via: via.into(),
            attempt: 0,
        }
    }

    #[test]
    fn only_user_messages_stasis_wrote_are_inbox_messages() {
        assert_eq!(
            InboxMessage::from_event(&user(3, "Hello")),
            Some(InboxMessage {
                seq: 3,
                text: "Hello".into()
            })
        );
        let assistant = r#"{"info":{"id":"m","role":"assistant"},"part":{"id":"p","text":"x"}}"#;
        assert_eq!(
            InboxMessage::from_event(&event(4, USER_MESSAGE_EVENT, assistant)),
            None
        );
        assert_eq!(InboxMessage::from_event(&user(5, "  ")), None);
        let other = event(6, "message.updated", r#"{"info":{"id":"m","role":"user"}}"#);
        assert_eq!(InboxMessage::from_event(&other), None);
        assert_eq!(
            InboxMessage::from_event(&event(7, USER_MESSAGE_EVENT, "[]")),
            None
        );
    }

    #[test]
    fn undelivered_messages_are_those_without_a_record_in_log_order() {
        let mut inbox = Inbox {
            messages: [user(2, "a"), user(5, "b"), user(9, "c"), user(12, "d")]
                .iter()
                .filter_map(InboxMessage::from_event)
                .collect(),
            ..Inbox::default()
        };
        inbox.remember(6, Some(record(2, "ses_a", VIA_MESSAGE)));
        inbox.remember(13, Some(record(9, "ses_b", VIA_PROMPT)));
        // A second record of the same attempt changes nothing: the first decision holds.
        inbox.remember(14, Some(record(2, "ses_b", VIA_MESSAGE)));
        // A later attempt (the first id went stale unsent) takes its place.
        let retried = Delivered {
            message_id: "msg_2b".into(),
            attempt: 1,
            ..record(5, "ses_a", VIA_MESSAGE)
        };
        inbox.remember(
            15,
            Some(Delivered {
                attempt: 0,
                ..retried.clone()
            }),
        );
        inbox.remember(16, Some(retried));
        assert_eq!(inbox.delivered[&5].0, 16);
        assert_eq!(inbox.delivered[&5].1.message_id, "msg_2b");
        inbox.messages.retain(|m| m.seq != 5);
        let waiting: Vec<u64> = inbox.undelivered().iter().map(|m| m.seq).collect();
        assert_eq!(waiting, [12]);
        let owed = |session| -> Vec<u64> { inbox.owed_to(session).iter().map(|m| m.seq).collect() };
        // Deliveries into another session, or by a dispatch prompt, are done.
        assert_eq!(owed("ses_a"), [2, 12]);
        assert_eq!(owed("ses_b"), [12]);
    }
}
