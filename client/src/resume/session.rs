//! Which runtime session the agent resumes in, and the start of a new one.
//!
//! The session is the one the restored kilo.db holds: the registry's (the agent's session as
//! its last container recorded it) when kilo lists it, else the most recently updated one the
//! agent's log names, else kilo's most recent. When kilo lists none (no kilo.db could be
//! restored) a session is created, and a session with no message gets the dispatch's prompt
//! (the prior conversation, then the undelivered messages): decided in the log first
//! ([`SESSION_PROMPT_EVENT`], with a delivery record of each message it carries), then sent.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::agent_log::{self, DispatchPrompt, NewEvent};
use super::inbox::{DELIVERED_EVENT, Delivered, Inbox, VIA_PROMPT};
use super::kilo_api::{Kilo, new_message_id};
use super::once::{self, Sent, Target};
use crate::error::Result;
use crate::http::Client;
use crate::ids::AgentRef;

/// The record of a new session's first prompt.
pub const SESSION_PROMPT_EVENT: &str = "stasis.resume.session_prompt";

/// A new session's first prompt, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPrompt {
    /// The session.
    pub session_id: String,
    /// kilo's id of the prompt's message.
    pub message_id: String,
    /// The log's seq the dispatch was built at: the inbox messages up to it are in the text.
    pub through_seq: u64,
    /// The prompt.
    pub text: String,
}

/// The agent's session among those kilo lists, if any.
pub(crate) fn choose(client: &Client, agent: &AgentRef, kilo: &Kilo) -> Result<Option<String>> {
    let sessions = kilo.sessions()?;
    if sessions.is_empty() {
        return Ok(None);
    }
    let registry = crate::town::registry(client, agent.town(), None)?;
    let registered = registry
        .agents
        .iter()
        .find(|a| a.agent_id == agent.agent() && a.rig_id == agent.rig())
        .and_then(|a| a.session_id.as_deref());
    if let Some(found) = sessions.iter().find(|s| Some(s.id.as_str()) == registered) {
        return Ok(Some(found.id.clone()));
    }
    let logged = agent_log::logged_sessions(client, agent)?;
    let known = sessions.iter().find(|s| logged.contains(&s.id));
    Ok(known.or(sessions.first()).map(|s| s.id.clone()))
}

/// Gives the empty session of `target` its first prompt, once: the one decided before, else
/// the dispatch's (`dispatch` is only called then). Answers the prompt and whether it was sent
/// now; `None` when the dispatch had nothing to say.
pub(crate) fn first_prompt(
    target: &Target<'_>,
    inbox: &mut Inbox,
    dispatch: impl FnOnce() -> Result<DispatchPrompt>,
) -> Result<Option<(SessionPrompt, bool)>> {
    let producer = format!("stasis.session_prompt.{}", target.session);
    let recorded = agent_log::events_of_type(
        target.client,
        target.agent,
        SESSION_PROMPT_EVENT,
        0,
        Some(target.session),
    )?;
    let earlier = recorded.events.iter().find_map(|e| {
        let prompt: SessionPrompt = e.data_as()?;
        (prompt.session_id == target.session).then_some((e.seq, prompt))
    });
    if let Some((at, prompt)) = earlier {
        let sent = send(target, &prompt, at)?;
        return Ok(Some((prompt, sent)));
    }
    let dispatch = dispatch()?;
    if dispatch.prompt.trim().is_empty() {
        return Ok(None);
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let prompt = SessionPrompt {
        session_id: target.session.to_owned(),
        message_id: new_message_id([], now_ms, &format!("{}:{producer}", target.agent)),
        through_seq: dispatch.event_watermark,
        text: dispatch.prompt,
    };
    let carried: Vec<Delivered> = inbox
        .undelivered()
        .into_iter()
        .filter(|m| m.seq <= prompt.through_seq)
        .map(|m| Delivered {
            seq: m.seq,
            session_id: prompt.session_id.clone(),
            message_id: prompt.message_id.clone(),
            via: VIA_PROMPT.to_owned(),
            attempt: 0,
        })
        .collect();
    let mut events = vec![NewEvent::new(
        SESSION_PROMPT_EVENT,
        target.session,
        &prompt,
    )?];
    for record in &carried {
        events.push(NewEvent::new(DELIVERED_EVENT, target.session, record)?);
    }
    let decided = agent_log::append_decision::<SessionPrompt>(
        target.client,
        target.agent,
        (&producer, 0),
        &events,
    )?;
    if let Some(earlier) = decided.earlier {
        // Decided meanwhile elsewhere, with the deliveries it carried: read them.
        *inbox = Inbox::read(target.client, target.agent)?;
        let sent = send(target, &earlier, decided.seq)?;
        return Ok(Some((earlier, sent)));
    }
    for (offset, record) in (1..).zip(carried) {
        inbox.remember(decided.seq + offset, Some(record));
    }
    target
        .kilo
        .prompt(target.session, &prompt.message_id, &prompt.text)?;
    Ok(Some((prompt, true)))
}

/// Sends a recorded first prompt unless it arrived. The session was empty when it was decided,
/// so no message can have come after it; should one have, it is sent all the same.
fn send(target: &Target<'_>, prompt: &SessionPrompt, decided_at: u64) -> Result<bool> {
    let (id, text) = (&prompt.message_id, &prompt.text);
    Ok(match once::send_once(target, None, id, text, decided_at)? {
        Sent::Now => true,
        Sent::Before => false,
        Sent::Stale => {
            target.kilo.prompt(target.session, id, text)?;
            true
        }
    })
}
