//! The stasis side of resuming: the agent's log read by type, decisions appended with a
//! producer stamp (so that a retried or repeated decision appends nothing and answers the
//! first one), the rebuilt conversation, the agent's sessions, and a dispatch.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;

/// Events read in one page.
const PAGE: u32 = 1_000;

/// One event of the agent's log, its data kept as JSON text.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct LogEvent {
    pub(crate) seq: u64,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    pub(crate) data: Box<RawValue>,
}

impl LogEvent {
    /// Its data read as `T`; `None` when it does not fit (a malformed event is skipped).
    pub(crate) fn data_as<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_str(self.data.get()).ok()
    }
}

#[derive(Deserialize)]
struct Page {
    events: Vec<LogEvent>,
    #[serde(default)]
    has_more: bool,
    #[serde(default)]
    next_after: Option<u64>,
    #[serde(default)]
    last_seq: u64,
}

/// Events of one type, and the log's newest seq when they were read.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub(crate) events: Vec<LogEvent>,
    pub(crate) last_seq: u64,
}

/// Every retained event of `kind` after `after` (optionally of one session), every page. A
/// cursor older than what the log keeps reads from its oldest event.
pub(crate) fn events_of_type(
    client: &Client,
    agent: &AgentRef,
    kind: &str,
    after: u64,
    session: Option<&str>,
) -> Result<Read> {
    if let Some(session) = session {
        crate::ids::check_id("session", session)?;
    }
    let mut read = Read::default();
    let mut cursor = after;
    loop {
        let mut path = agent.path(&format!("/events?type={kind}&after={cursor}&limit={PAGE}"));
        if let Some(session) = session {
            path.push_str(&format!("&session_id={session}"));
        }
        let page: Page = match client.get_json(&path, None) {
            Ok(page) => page,
            Err(e) => match oldest_kept(&e) {
                Some(first_seq) if first_seq.saturating_sub(1) > cursor => {
                    cursor = first_seq.saturating_sub(1);
                    continue;
                }
                _ => return Err(e),
            },
        };
        read.last_seq = read.last_seq.max(page.last_seq);
        let last = page.events.last().map(|e| e.seq);
        let next = page.next_after.or(last).unwrap_or(cursor);
        let more = page.has_more && next > cursor;
        cursor = next;
        read.events.extend(page.events);
        if !more {
            return Ok(read);
        }
    }
}

/// The `first_seq` of a 410 `cursor_expired`.
fn oldest_kept(error: &Error) -> Option<u64> {
    match error {
        Error::Api {
            status: 410,
            detail: Some(detail),
            ..
        } => detail.get("first_seq").and_then(serde_json::Value::as_u64),
        _ => None,
    }
}

/// One event to append, its data already JSON.
#[derive(Debug, Serialize)]
pub(crate) struct NewEvent<'a> {
    #[serde(rename = "type")]
    pub(crate) kind: &'a str,
    pub(crate) session_id: &'a str,
    pub(crate) data: Box<RawValue>,
}

impl<'a> NewEvent<'a> {
    /// An event of `kind` in `session_id` carrying `data`.
    pub(crate) fn new(kind: &'a str, session_id: &'a str, data: &impl Serialize) -> Result<Self> {
        let data = serde_json::value::to_raw_value(data).map_err(|e| Error::Protocol {
            what: format!("a {kind} event"),
            detail: format!("its data does not encode: {e}"),
        })?;
        Ok(NewEvent {
            kind,
            session_id,
            data,
        })
    }
}

#[derive(Serialize)]
struct Append<'a> {
    events: &'a [NewEvent<'a>],
    producer_id: &'a str,
    producer_seq: u64,
}

#[derive(Deserialize)]
struct Appended {
    first_seq: u64,
    #[serde(default)]
    duplicate: bool,
}

/// A decision as the log holds it: the seq of its first event, and that event's data.
#[derive(Debug)]
pub(crate) struct Decided<T> {
    pub(crate) seq: u64,
    /// The data of an earlier decision under the same stamp, when there was one (a decision
    /// made twice keeps the first); `None` when these events were appended now.
    pub(crate) earlier: Option<T>,
}

/// Appends `events` as one batch stamped `producer_id` / `attempt`, retried: a decision is in
/// the log before it is acted on, and a second decision under the same stamp appends nothing
/// and answers the first. (`attempt` counts decisions made again under a fresh message id.)
pub(crate) fn append_decision<T: DeserializeOwned>(
    client: &Client,
    agent: &AgentRef,
    (producer_id, attempt): (&str, u32),
    events: &[NewEvent<'_>],
) -> Result<Decided<T>> {
    crate::ids::check_id("producer", producer_id)?;
    let body = Append {
        events,
        producer_id,
        producer_seq: u64::from(attempt),
    };
    let appended: Appended = client.post_json(&agent.path("/events"), &body, None)?;
    let seq = appended.first_seq;
    let kind = events.first().map(|e| e.kind);
    let (true, Some(kind)) = (appended.duplicate, kind) else {
        return Ok(Decided { seq, earlier: None });
    };
    let earlier = events_of_type(client, agent, kind, seq.saturating_sub(1), None)?
        .events
        .iter()
        .find(|e| e.seq == seq)
        .and_then(LogEvent::data_as::<T>);
    Ok(Decided { seq, earlier })
}

/// A turn of the rebuilt conversation.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Turn {
    pub(crate) role: String,
    pub(crate) content: String,
    #[serde(default)]
    pub(crate) unfinished: bool,
}

#[derive(Deserialize)]
struct Conversation {
    turns: Vec<Turn>,
}

/// The last assistant turn of `session`'s rebuilt conversation (the most recent 100 turns
/// within a budget large enough never to leave it out).
pub(crate) fn last_assistant_turn(
    client: &Client,
    agent: &AgentRef,
    session: &str,
) -> Result<Option<Turn>> {
    crate::ids::check_id("session", session)?;
    let path = agent.path(&format!(
        "/conversation?session_id={session}&max_turns=100&max_tokens=1000000"
    ));
    let conversation: Conversation = client.get_json(&path, None)?;
    Ok(conversation
        .turns
        .into_iter()
        .rev()
        .find(|t| t.role == "assistant"))
}

#[derive(Deserialize)]
struct Sessions {
    #[serde(default)]
    sessions: Vec<SessionRecord>,
}

#[derive(Deserialize)]
struct SessionRecord {
    session_id: String,
}

/// The ids of the sessions the agent's log names.
pub(crate) fn logged_sessions(client: &Client, agent: &AgentRef) -> Result<Vec<String>> {
    let sessions: Sessions = client.get_json(&agent.path("/sessions"), None)?;
    Ok(sessions
        .sessions
        .into_iter()
        .map(|s| s.session_id)
        .collect())
}

/// What resuming reads of a dispatch (`POST .../dispatch`, or the one `boot` handed over).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DispatchPrompt {
    /// The prior conversation in `<prior-conversation>`, then the newest user text.
    #[serde(default)]
    pub prompt: String,
    /// The newest seq of the log it was built from: the messages up to it are in `prompt`.
    #[serde(default)]
    pub event_watermark: u64,
}

#[derive(Deserialize)]
struct Dispatched {
    dispatch: DispatchPrompt,
}

/// `POST .../agents/{agent}/dispatch {}`: a fresh dispatch of the agent.
pub(crate) fn dispatch(client: &Client, agent: &AgentRef) -> Result<DispatchPrompt> {
    let body = serde_json::Map::new();
    let dispatched: Dispatched = client.post_json(&agent.path("/dispatch"), &body, None)?;
    Ok(dispatched.dispatch)
}

/// The text of message `message_id` of `session` as kilo's `message.part.updated` events in
/// the log give it (from `from_seq` on): each text part's latest full text, in order of first
/// sight, joined with `"\n"`; synthetic and ignored parts left out.
pub(crate) fn logged_text(
    client: &Client,
    agent: &AgentRef,
    session: &str,
    message_id: &str,
    from_seq: u64,
) -> Result<String> {
    #[derive(Deserialize)]
    struct Data {
        part: Part,
    }
    #[derive(Deserialize)]
    struct Part {
        id: String,
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        synthetic: Option<bool>,
        #[serde(default)]
        ignored: Option<bool>,
    }
    let updates = events_of_type(
        client,
        agent,
        "message.part.updated",
        from_seq.saturating_sub(1),
        Some(session),
    )?;
    let mut parts: Vec<(String, String)> = Vec::new();
    for part in updates.events.iter().filter_map(|e| e.data_as::<Data>()) {
        let part = part.part;
        let said = part.synthetic != Some(true) && part.ignored != Some(true);
        let text_part = part.kind.as_deref().is_none_or(|k| k == "text");
        let (true, true, Some(text)) =
            (part.message_id == message_id, said && text_part, part.text)
        else {
            continue;
        };
        match parts.iter_mut().find(|(id, _)| *id == part.id) {
            Some((_, known)) => *known = text,
            None => parts.push((part.id, text)),
        }
    }
    let texts: Vec<&str> = parts
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| !t.is_empty())
        .collect();
    Ok(texts.join("\n"))
}
