//! The reply a crash cut: found in kilo's messages and the log's, finished once.
//!
//! After a SIGKILL kilo's database keeps the cut assistant message with `""` text and no
//! `time.completed` or `finish`; only stasis's log holds what had streamed. A kilo.db restored
//! in a new container may be older still (the sidecar pushes it when a turn ends and every few
//! seconds): it may lack the cut reply, or the user message it answered too. So the session's
//! timeline is kilo's messages and those the log saw (kilo's `message.updated`), by id (kilo's
//! ids ascend in time). When its last user message has no finished reply and kilo is not
//! running a turn, the reply was cut: by default kilo is sent a continuation carrying the text
//! streamed before the cut (and the user's message, when the restored kilo.db lost it); see
//! [`CutReplyMode`]. The decision ([`CUT_REPLY_EVENT`], stamped from the cut message's id) is
//! in the log before it is acted on, so it is made once across crashes and containers.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::agent_log::{self, LogEvent, NewEvent};
use super::kilo_api::{KiloMessage, new_message_id};
use super::once::{self, Sent, Target};
use crate::error::Result;

/// The record of a decision about a cut reply.
pub const CUT_REPLY_EVENT: &str = "stasis.resume.cut_reply";

/// What to do with a reply a crash cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CutReplyMode {
    /// Send a continuation: the model is told its reply was cut by a restart and given the
    /// text streamed before the cut, to go on from there.
    #[default]
    Continue,
    /// Send the user's message again.
    Resend,
    /// Leave it (the decision is still recorded).
    Nothing,
}

impl CutReplyMode {
    fn name(self) -> &'static str {
        match self {
            CutReplyMode::Continue => "continue",
            CutReplyMode::Resend => "resend",
            CutReplyMode::Nothing => "nothing",
        }
    }
}

/// A message as the log saw it: kilo's `message.updated` events of one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) id: String,
    pub(crate) role: String,
    pub(crate) finished: bool,
    /// The seq of its first event.
    pub(crate) first_seq: u64,
}

/// The messages `events` (kilo's `message.updated`, in seq order) show, by first sight; a
/// message is finished once any of its events says so.
pub(crate) fn seen_messages(events: &[LogEvent]) -> Vec<Seen> {
    #[derive(Deserialize)]
    struct Data {
        info: Info,
    }
    #[derive(Deserialize)]
    struct Info {
        id: String,
        role: String,
        #[serde(default)]
        time: Option<Time>,
        #[serde(default)]
        finish: Option<String>,
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Time {
        #[serde(default)]
        completed: Option<f64>,
    }
    let mut seen: Vec<Seen> = Vec::new();
    for event in events {
        let Some(Data { info }) = event.data_as::<Data>() else {
            continue;
        };
        let finished = ends_turn(&info.role, info.finish.as_deref(), info.error.is_some())
            || (info.finish.is_none() && info.time.and_then(|t| t.completed).is_some());
        match seen.iter_mut().find(|s| s.id == info.id) {
            Some(known) => known.finished |= finished,
            None => seen.push(Seen {
                id: info.id,
                role: info.role,
                finished,
                first_seq: event.seq,
            }),
        }
    }
    seen
}

/// An assistant message ended the turn: it failed, or it finished for another reason than
/// calling tools (after a tool call the turn goes on in a new message).
fn ends_turn(role: &str, finish: Option<&str>, failed: bool) -> bool {
    role == "assistant"
        && (failed || finish.is_some_and(|reason| !matches!(reason, "tool-calls" | "unknown")))
}

/// A reply that was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cut {
    /// The user message left without a finished reply.
    pub(crate) user_message_id: String,
    /// Its text, when kilo holds it (`None`: only the log does).
    pub(crate) user_text: Option<String>,
    /// The unfinished assistant message, when one was created.
    pub(crate) cut_message_id: Option<String>,
    /// The seq of the user message's first event in the log, when the log saw it.
    pub(crate) user_seq: Option<u64>,
}

impl Cut {
    /// What the decision is known by: the cut message, else the unanswered user message.
    fn key(&self) -> &str {
        self.cut_message_id
            .as_deref()
            .unwrap_or(&self.user_message_id)
    }
}

/// The cut reply of a session, if any: over kilo's messages and those the log saw, its last
/// user message (by id) has no finished reply, and no turn is running (`busy`).
pub(crate) fn find_cut(kilo: &[KiloMessage], log: &[Seen], busy: bool) -> Option<Cut> {
    if busy {
        return None;
    }
    let in_kilo = kilo.iter().map(|m| {
        let info = &m.info;
        let done = ends_turn(&info.role, info.finish.as_deref(), info.error.is_some())
            || (info.finish.is_none() && info.time.completed.is_some());
        (info.id.as_str(), info.role.as_str(), done)
    });
    let in_log = log
        .iter()
        .map(|s| (s.id.as_str(), s.role.as_str(), s.finished));
    let all: Vec<(&str, &str, bool)> = in_kilo.chain(in_log).collect();
    let user = all
        .iter()
        .filter(|(_, role, _)| *role == "user")
        .map(|(id, _, _)| *id)
        .max()?;
    let reply = all
        .iter()
        .filter(|(id, role, _)| *role == "assistant" && *id > user)
        .map(|(id, _, _)| *id)
        .max();
    if let Some(reply) = reply
        && all.iter().any(|(id, _, done)| *id == reply && *done)
    {
        return None;
    }
    Some(Cut {
        user_message_id: user.to_owned(),
        user_text: kilo
            .iter()
            .find(|m| m.info.id == user)
            .map(KiloMessage::text),
        cut_message_id: reply.map(str::to_owned),
        user_seq: log.iter().find(|s| s.id == user).map(|s| s.first_seq),
    })
}

/// The continuation's text: the model's cut reply, and the request to go on from it; with
/// `lost_question`, the user's message the restored session lost, first.
pub(crate) fn continuation_text(streamed: &str, lost_question: Option<&str>) -> String {
    let mut text =
        String::from("[stasis] Your previous reply was cut off by a restart of the agent runtime.");
    if let Some(question) = lost_question {
        text.push_str(&format!(
            " The restart also lost the message you were answering; it was:\n<message>\n{question}\n</message>\n"
        ));
    }
    if streamed.trim().is_empty() {
        text.push_str(" None of your reply was saved. Please answer that message again.");
    } else {
        text.push_str(&format!(
            " This is what you had written before the cut:\n<cut-reply>\n{streamed}\n</cut-reply>\nPlease continue from exactly where it stops, without repeating it."
        ));
    }
    text
}

/// What [`complete`] reads from the log, only when a fresh decision needs it.
pub(crate) struct FromLog<'f> {
    /// The text streamed of the cut reply.
    pub(crate) streamed: &'f dyn Fn() -> Result<String>,
    /// The text of a user message (by id, its first seq), when kilo lost it.
    pub(crate) user_text: &'f dyn Fn(&str, u64) -> Result<String>,
}

/// A decision as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CutReplyDecision {
    /// The session.
    pub session_id: String,
    /// The user message left without a finished reply.
    pub user_message_id: String,
    /// The cut assistant message, when kilo had one.
    pub cut_message_id: Option<String>,
    /// `continue`, `resend` or `nothing`.
    pub action: String,
    /// kilo's id of the message that completes it (none for `nothing`).
    pub message_id: Option<String>,
    /// That message's text.
    #[serde(default)]
    pub text: String,
    /// How many times it was decided before under another id, which never arrived and no
    /// longer sorted last when it was to be sent again.
    #[serde(default)]
    pub attempt: u32,
}

/// What became of a cut reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutReplyOutcome {
    /// The decision (the first one, when it had been made before).
    pub decision: CutReplyDecision,
    /// Its message was sent now (`false`: nothing to send, or it had arrived already).
    pub sent: bool,
}

/// Decides what to do with `cut` (or finds the decision made before) and acts on it once.
/// `from_log` is only read for a fresh decision.
pub(crate) fn complete(
    target: &Target<'_>,
    messages: &[KiloMessage],
    cut: &Cut,
    mode: CutReplyMode,
    from_log: &FromLog<'_>,
) -> Result<CutReplyOutcome> {
    let producer = format!("stasis.cut_reply.{}", cut.key());
    crate::ids::check_id("producer", &producer)?;
    let decision = match recorded(target, cut.key())? {
        Some((at, earlier)) => match act(target, messages, &earlier, at)? {
            Some(sent) => {
                return Ok(CutReplyOutcome {
                    decision: earlier,
                    sent,
                });
            }
            // Decided before, never sent, and no longer last: decided again under a new id.
            None => CutReplyDecision {
                attempt: earlier.attempt + 1,
                message_id: None,
                ..earlier
            },
        },
        None => fresh_decision(target, cut, mode, from_log)?,
    };
    let message_id = (decision.action != CutReplyMode::Nothing.name()).then(|| {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let ids = messages.iter().map(|m| m.info.id.as_str());
        let logged = [
            Some(cut.user_message_id.as_str()),
            cut.cut_message_id.as_deref(),
        ];
        let seed = format!("{producer}:{}", decision.attempt);
        new_message_id(ids.chain(logged.into_iter().flatten()), now_ms, &seed)
    });
    let decision = CutReplyDecision {
        message_id,
        ..decision
    };
    let event = NewEvent::new(CUT_REPLY_EVENT, target.session, &decision)?;
    let decided = agent_log::append_decision::<CutReplyDecision>(
        target.client,
        target.agent,
        (&producer, decision.attempt),
        &[event],
    )?;
    let decision = decided.earlier.unwrap_or(decision);
    // A decision made now (or just now elsewhere) is sent even if it went stale meanwhile.
    let sent = match act(target, messages, &decision, decided.seq)? {
        Some(sent) => sent,
        None => send(target, &decision)?,
    };
    Ok(CutReplyOutcome { decision, sent })
}

/// The first decision about `cut`: its text by `mode`, its message id still to be minted.
fn fresh_decision(
    target: &Target<'_>,
    cut: &Cut,
    mode: CutReplyMode,
    from_log: &FromLog<'_>,
) -> Result<CutReplyDecision> {
    let lost_question = match (&cut.user_text, cut.user_seq, mode) {
        (None, Some(seq), CutReplyMode::Continue | CutReplyMode::Resend) => {
            Some((from_log.user_text)(&cut.user_message_id, seq)?)
        }
        _ => None,
    };
    let text = match mode {
        CutReplyMode::Continue => {
            continuation_text(&(from_log.streamed)()?, lost_question.as_deref())
        }
        CutReplyMode::Resend => cut.user_text.clone().or(lost_question).unwrap_or_default(),
        CutReplyMode::Nothing => String::new(),
    };
    Ok(CutReplyDecision {
        session_id: target.session.to_owned(),
        user_message_id: cut.user_message_id.clone(),
        cut_message_id: cut.cut_message_id.clone(),
        action: mode.name().to_owned(),
        message_id: None,
        text,
        attempt: 0,
    })
}

/// The latest decision recorded about the cut known by `key`, with its seq. The log is read
/// rather than trusting the stamp alone: stasis remembers a limited number of stamps.
fn recorded(target: &Target<'_>, key: &str) -> Result<Option<(u64, CutReplyDecision)>> {
    let decisions = agent_log::events_of_type(
        target.client,
        target.agent,
        CUT_REPLY_EVENT,
        0,
        Some(target.session),
    )?;
    let named = decisions.events.iter().filter_map(|e| {
        let decision: CutReplyDecision = e.data_as()?;
        let named = decision.cut_message_id.as_deref() == Some(key)
            || (decision.cut_message_id.is_none() && decision.user_message_id == key);
        named.then_some((e.seq, decision))
    });
    Ok(named.max_by_key(|(seq, d)| (d.attempt, std::cmp::Reverse(*seq))))
}

/// Acts on a recorded decision: `Some(sent now)`, or `None` when its message never arrived
/// and no longer sorts last (see [`once::Sent::Stale`]).
fn act(
    target: &Target<'_>,
    messages: &[KiloMessage],
    decision: &CutReplyDecision,
    decided_at: u64,
) -> Result<Option<bool>> {
    let (Some(id), true) = (&decision.message_id, decision.session_id == target.session) else {
        return Ok(Some(false));
    };
    Ok(
        match once::send_once(target, Some(messages), id, &decision.text, decided_at)? {
            Sent::Now => Some(true),
            Sent::Before => Some(false),
            Sent::Stale => None,
        },
    )
}

fn send(target: &Target<'_>, decision: &CutReplyDecision) -> Result<bool> {
    let Some(id) = &decision.message_id else {
        return Ok(false);
    };
    target.kilo.prompt(target.session, id, &decision.text)?;
    Ok(true)
}

#[cfg(test)]
mod tests;
