//! The inbox: user messages stasis appended to the agent's log (`POST /mayor/message`, and
//! the same for any agent), delivered into the runtime's session exactly once and in order.
//!
//! Each delivery is decided in the log first ([`DELIVERED_EVENT`]: the message's seq, the
//! session, kilo's message id; stamped `stasis.inbox.<seq>`), then acted on with that id, so a
//! crash in between is finished by the next start ([`super::once`]) and a second decision
//! appends nothing and keeps the first.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::agent_log::{self, LogEvent, NewEvent};
use super::kilo_api::{KiloMessage, new_message_id};
use super::once::{self, Target};
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

    /// Keeps the first record of each message.
    pub(crate) fn remember(&mut self, decided_at: u64, record: Option<Delivered>) {
        if let Some(record) = record {
            self.delivered
                .entry(record.seq)
                .or_insert((decided_at, record));
        }
    }

    /// The messages with no recorded delivery, in log order.
    pub(crate) fn undelivered(&self) -> Vec<&InboxMessage> {
        self.messages
            .iter()
            .filter(|m| !self.delivered.contains_key(&m.seq))
            .collect()
    }

    /// Recorded deliveries into `session` as their own message: each may still have to be
    /// sent (a crash came between the record and the send).
    pub(crate) fn recorded_into(&self, session: &str) -> Vec<(u64, &Delivered, &InboxMessage)> {
        self.messages
            .iter()
            .filter_map(|m| {
                let (at, record) = self.delivered.get(&m.seq)?;
                (record.session_id == session && record.via == VIA_MESSAGE)
                    .then_some((*at, record, m))
            })
            .collect()
    }
}

/// The producer stamp of a message's delivery.
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
    if let Some((at, record)) = inbox.delivered.get(&message.seq).cloned() {
        return finish(target, known, &record, message, at);
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let existing = known
        .into_iter()
        .flatten()
        .map(|m| m.info.id.as_str())
        .chain(newest_id);
    let seed = format!("{}:inbox:{}", target.agent, message.seq);
    let record = Delivered {
        seq: message.seq,
        session_id: target.session.to_owned(),
        message_id: new_message_id(existing, now_ms, &seed),
        via: VIA_MESSAGE.to_owned(),
    };
    let event = NewEvent::new(DELIVERED_EVENT, target.session, &record)?;
    let decided = agent_log::append_decision::<Delivered>(
        target.client,
        target.agent,
        &producer_id(message.seq),
        &[event],
    )?;
    if let Some(earlier) = decided.earlier {
        inbox.remember(decided.seq, Some(earlier.clone()));
        return finish(target, known, &earlier, message, decided.seq);
    }
    inbox.remember(decided.seq, Some(record.clone()));
    // Decided just now, under an id minted just now: kilo cannot hold it yet.
    target
        .kilo
        .prompt(target.session, &record.message_id, &message.text)?;
    Ok(Delivery {
        seq: message.seq,
        message_id: record.message_id,
        sent: true,
    })
}

/// Acts on a recorded delivery: sent when it went into this session as its own message and
/// has not arrived; otherwise (another session, or a dispatch prompt) it is done.
fn finish(
    target: &Target<'_>,
    known: Option<&[KiloMessage]>,
    record: &Delivered,
    message: &InboxMessage,
    decided_at: u64,
) -> Result<Delivery> {
    let sent = if record.session_id == target.session && record.via == VIA_MESSAGE {
        once::send_once(target, known, &record.message_id, &message.text, decided_at)?
    } else {
        false
    };
    Ok(Delivery {
        seq: message.seq,
        message_id: record.message_id.clone(),
        sent,
    })
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
        // A second record of a message changes nothing: the first decision holds.
        inbox.remember(14, Some(record(2, "ses_b", VIA_MESSAGE)));
        let waiting: Vec<u64> = inbox.undelivered().iter().map(|m| m.seq).collect();
        assert_eq!(waiting, [5, 12]);
        let retried: Vec<(u64, u64)> = inbox
            .recorded_into("ses_a")
            .iter()
            .map(|(at, record, _)| (*at, record.seq))
            .collect();
        assert_eq!(
            retried,
            [(6, 2)],
            "deliveries into another session or by prompt are done"
        );
        assert!(inbox.recorded_into("ses_b").is_empty());
    }
}
