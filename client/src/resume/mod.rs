//! Resuming an agent's work when its runtime comes back: [`after_start`] runs once `kilo
//! serve` answers (in the same container after a crash, or in a new container after `boot`),
//! and [`follow_inbox`] delivers messages while it runs.
//!
//! `after_start`, in order:
//! 1. **The session** ([`session`]): the one the restored kilo.db holds (the registry's, else
//!    one the log names, else kilo's newest); with none, a new one. A session with no
//!    message gets the dispatch's prompt (the prior conversation, then the undelivered
//!    messages), once.
//! 2. **The cut reply** ([`cut_reply`]): when the session's last user message has no finished
//!    reply because the runtime died while it streamed, it is completed by the
//!    [`CutReplyMode`] (by default a continuation carrying the text the log holds of it).
//! 3. **The inbox** ([`inbox`]): every user message stasis appended to the log that was not
//!    delivered yet goes into the session, in order.
//!
//! Every action is decided in the agent's log before it is taken (`stasis.resume.*` and
//! `stasis.inbox.delivered` events, each stamped so that a second decision appends nothing and
//! answers the first), with the kilo message id it will use. A crash between the decision and
//! the action is finished by the next start, which sends that message only if neither kilo nor
//! the log has seen it: nothing is lost and nothing is sent twice, across crashes and
//! containers.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use stasis_client::resume::{self, ResumeOptions};
//! use stasis_client::{AgentRef, Client, Config};
//!
//! fn main() -> Result<(), stasis_client::Error> {
//!     let client = Client::new(Config::from_env()?);
//!     let mayor = AgentRef::new("demo", "main", "mayor")?;
//!     let url = "http://127.0.0.1:4096";
//!     let outcome = resume::after_start(&client, &mayor, url, &ResumeOptions::default(), &|l| {
//!         eprintln!("{l}")
//!     })?;
//!     let follower = resume::follow_inbox(
//!         &client,
//!         &mayor,
//!         url,
//!         &outcome.session_id,
//!         outcome.inbox_cursor,
//!         Arc::new(|l: &str| eprintln!("{l}")),
//!     )?;
//!     // ... while the runtime runs ...
//!     follower.stop();
//!     Ok(())
//! }
//! ```

mod agent_log;
pub mod cut_reply;
mod follow;
pub mod inbox;
mod kilo_api;
mod once;
pub mod session;

pub use agent_log::DispatchPrompt;
pub use cut_reply::{CUT_REPLY_EVENT, CutReplyDecision, CutReplyMode, CutReplyOutcome};
pub use follow::{InboxFollower, STOP_CHECK, follow_inbox};
pub use inbox::{DELIVERED_EVENT, Delivered, Delivery, USER_MESSAGE_EVENT};
pub use session::{SESSION_PROMPT_EVENT, SessionPrompt};

use std::thread;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::http::Client;
use crate::ids::AgentRef;
use inbox::Inbox;
use kilo_api::Kilo;
use once::Target;

/// How to resume.
#[derive(Debug, Clone)]
pub struct ResumeOptions {
    /// What to do with a reply a crash cut.
    pub cut_reply: CutReplyMode,
    /// The dispatch `boot` handed over for this agent, if any; without one, a new session's
    /// prompt comes from `POST .../agents/{agent}/dispatch`.
    pub dispatch: Option<DispatchPrompt>,
    /// How long the inbox waits for the turn of a completed cut reply (or of a new session's
    /// prompt) to end before its messages go in anyway: kilo answers only the newest user
    /// message of a turn, so a message sent at once would take the continuation's place.
    pub settle: Duration,
}

impl Default for ResumeOptions {
    /// Continue a cut reply, no dispatch at hand, 5 minutes to settle.
    fn default() -> Self {
        ResumeOptions {
            cut_reply: CutReplyMode::default(),
            dispatch: None,
            settle: Duration::from_secs(300),
        }
    }
}

/// Which session the agent resumed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionOrigin {
    /// The restored kilo.db held it.
    Restored,
    /// kilo listed none: created now.
    Created,
}

/// What [`after_start`] did.
#[derive(Debug, Clone)]
pub struct ResumeOutcome {
    /// The session the agent runs (record it in the registry).
    pub session_id: String,
    /// Where it came from.
    pub origin: SessionOrigin,
    /// The first prompt of an empty session, and whether it was sent now.
    pub first_prompt: Option<(SessionPrompt, bool)>,
    /// The cut reply, when there was one.
    pub cut_reply: Option<CutReplyOutcome>,
    /// The inbox messages delivered (or found delivered) into the session, in order.
    pub delivered: Vec<Delivery>,
    /// The log's seq up to which the inbox was read: [`follow_inbox`] goes on from there.
    pub inbox_cursor: u64,
}

/// Resumes `agent` in the runtime at `runtime_url`, which answers already: see the module's
/// documentation. `log` gets one line per thing done.
///
/// # Errors
///
/// When stasis or the runtime cannot be reached or refuses (after the client's retries). What
/// was decided before the error is in the log, and the next call finishes it.
pub fn after_start(
    client: &Client,
    agent: &AgentRef,
    runtime_url: &str,
    options: &ResumeOptions,
    log: &dyn Fn(&str),
) -> Result<ResumeOutcome> {
    let say = |line: &str| log(&format!("resume {agent}: {line}"));
    let kilo = Kilo::new(runtime_url)?;
    let mut inbox = Inbox::read(client, agent)?;
    let (session_id, origin) = match session::choose(client, agent, &kilo)? {
        Some(id) => (id, SessionOrigin::Restored),
        None => (kilo.create_session()?, SessionOrigin::Created),
    };
    say(&format!("session {session_id} ({origin:?})"));
    let target = Target {
        client,
        agent,
        kilo: &kilo,
        session: &session_id,
    };
    let mut messages = kilo.messages(&session_id)?;
    let mut outcome = ResumeOutcome {
        session_id: session_id.clone(),
        origin,
        first_prompt: None,
        cut_reply: None,
        delivered: Vec::new(),
        inbox_cursor: inbox.read_up_to,
    };
    let mut newest_id = None;
    if messages.is_empty() {
        let dispatch = || match &options.dispatch {
            Some(dispatch) => Ok(dispatch.clone()),
            None => agent_log::dispatch(client, agent),
        };
        outcome.first_prompt = session::first_prompt(&target, &mut inbox, dispatch)?;
        if let Some((prompt, sent)) = &outcome.first_prompt {
            say(&format!(
                "first prompt {} (through seq {}, sent now: {sent})",
                prompt.message_id, prompt.through_seq
            ));
            newest_id = Some(prompt.message_id.clone());
        }
    } else if let Some(cut) = find_cut(client, agent, &kilo, &session_id, &messages)? {
        let from_log = cut_reply::FromLog {
            streamed: &|| streamed_text(client, agent, &session_id),
            user_text: &|id, seq| agent_log::logged_text(client, agent, &session_id, id, seq),
        };
        let completed =
            cut_reply::complete(&target, &messages, &cut, options.cut_reply, &from_log)?;
        say(&format!(
            "cut reply to {}: {} as {:?} (sent now: {})",
            cut.user_message_id,
            completed.decision.action,
            completed.decision.message_id,
            completed.sent
        ));
        newest_id = completed.decision.message_id.clone();
        outcome.cut_reply = Some(completed);
    }
    let sent = outcome.cut_reply.as_ref().is_some_and(|c| c.sent)
        || outcome.first_prompt.as_ref().is_some_and(|(_, sent)| *sent);
    if let (true, Some(id)) = (sent, newest_id.as_deref()) {
        match settle(&kilo, &session_id, id, options.settle)? {
            Some(settled) => messages = settled,
            None => say(&format!(
                "{id}'s turn did not end within {:?}",
                options.settle
            )),
        }
    }
    let known = Some(messages.as_slice());
    let owed: Vec<_> = inbox.owed_to(&session_id).into_iter().cloned().collect();
    for message in owed {
        let delivery = inbox::deliver(&target, &mut inbox, &message, known, newest_id.as_deref())?;
        if delivery.sent {
            say(&format!(
                "delivered seq {} as {}",
                delivery.seq, delivery.message_id
            ));
            newest_id = Some(delivery.message_id.clone());
        }
        outcome.delivered.push(delivery);
    }
    Ok(outcome)
}

/// Waits until kilo holds `message_id` and has answered the session's last user message, for
/// at most `within`; answers kilo's messages then, or `None` when the time ran out.
///
/// While the session is busy only `GET /session/status` is asked (a small map): the whole
/// session's messages are read once it is idle. Polling them through the turn made kilo
/// serialize the conversation ten times a second while it prepared its first model request
/// after a start, on the same thread.
fn settle(
    kilo: &Kilo,
    session: &str,
    message_id: &str,
    within: Duration,
) -> Result<Option<Vec<kilo_api::KiloMessage>>> {
    let deadline = Instant::now() + within;
    loop {
        if !kilo.is_busy(session)? {
            let messages = kilo.messages(session)?;
            let holds = messages.iter().any(|m| m.info.id == message_id);
            if holds && cut_reply::find_cut(&messages, &[], false).is_none() {
                return Ok(Some(messages));
            }
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// The session's cut reply, over kilo's messages and those the log saw.
fn find_cut(
    client: &Client,
    agent: &AgentRef,
    kilo: &Kilo,
    session: &str,
    messages: &[kilo_api::KiloMessage],
) -> Result<Option<cut_reply::Cut>> {
    let logged = agent_log::events_of_type(client, agent, "message.updated", 0, Some(session))?;
    let seen = cut_reply::seen_messages(&logged.events);
    Ok(cut_reply::find_cut(messages, &seen, kilo.is_busy(session)?))
}

/// The text the log holds of the session's cut reply: its last assistant turn, when that
/// turn is unfinished.
fn streamed_text(client: &Client, agent: &AgentRef, session: &str) -> Result<String> {
    let turn = agent_log::last_assistant_turn(client, agent, session)?;
    Ok(turn
        .filter(|t| t.unfinished)
        .map(|t| t.content)
        .unwrap_or_default())
}
