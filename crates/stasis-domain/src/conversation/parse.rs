//! Reading one event into what it does to one message.
//!
//! Each event's JSON is parsed once, into small structs that borrow their
//! strings from the event (copying only strings with escapes), because a
//! rebuild reads thousands of events and must cost about as much as reading
//! them.

use super::raw::{FlatData, MessageData, PartType, RawPart};
use super::text::Text;
use super::tool::ToolCall;
use crate::event_log::Event;
use std::borrow::Cow;

/// What one event does to one message.
pub(super) struct Update<'a> {
    /// The message's id; never empty.
    pub message_id: Cow<'a, str>,
    /// The role, when the event names one.
    pub role: Option<Cow<'a, str>>,
    /// What changes in one of the message's parts.
    pub part: Option<PartUpdate<'a>>,
    /// The event finishes the message.
    pub finishes: bool,
    /// The message is gone (`message.removed`).
    pub removes_message: bool,
}

/// A change to one part of a message.
pub(super) struct PartUpdate<'a> {
    /// The part's id; `None` (also for `""`) names the one unnamed part of
    /// a message.
    pub part_id: Option<Cow<'a, str>>,
    pub change: PartChange<'a>,
}

/// How a part changes.
pub(super) enum PartChange<'a> {
    /// The part's whole text so far; `ended` once it is final, `streamed`
    /// when a delta came beside it (opencode < 1.2 streams that way).
    Text {
        full: Cow<'a, str>,
        ended: bool,
        streamed: bool,
    },
    /// A streamed piece to append; `live` for kilo's `message.part.delta`,
    /// whose part is streaming until an ended full text arrives.
    Delta { piece: Cow<'a, str>, live: bool },
    /// A tool call's latest state.
    Tool(ToolCall<'a>),
    /// Not what was said: reasoning, step markers, synthetic text.
    Hidden,
    /// The part is gone (`message.part.removed`).
    Removed,
}

/// What an event's type makes of it.
#[derive(Clone, Copy)]
enum Kind {
    /// Carries a message's info and maybe a part; `finishes` by its type
    /// alone (the design text's `*.completed`), `announces` when a user
    /// message that shows up in it is finished (`message.updated`).
    Message {
        finishes: bool,
        announces: bool,
    },
    Delta,
    MessageRemoved,
    PartRemoved,
}

fn kind(event_type: &str) -> Option<Kind> {
    let message = |finishes, announces| {
        Some(Kind::Message {
            finishes,
            announces,
        })
    };
    match event_type {
        "message.updated" => message(false, true),
        "message.created" | "message_part.updated" | "message.part.updated" => {
            message(false, false)
        }
        "message.completed" | "assistant.completed" => message(true, false),
        "message.part.delta" => Some(Kind::Delta),
        "message.removed" => Some(Kind::MessageRemoved),
        "message.part.removed" => Some(Kind::PartRemoved),
        _ => None,
    }
}

/// The update `event` carries, or `None` when it is not a message event or
/// is malformed.
pub(super) fn parse(event: &Event) -> Option<Update<'_>> {
    let kind = kind(&event.event_type)?;
    // Serde would also read a JSON array positionally into the struct.
    if !event.data.trim_start().starts_with('{') {
        return None;
    }
    // Each kind has its own shape, kept small; fields are taken out of it
    // rather than it moved around, since this runs once per event.
    let data = event.data.as_str();
    match kind {
        Kind::Message {
            finishes,
            announces,
        } => message_update(&mut serde_json::from_str(data).ok()?, finishes, announces),
        Kind::Delta => delta_update(&mut serde_json::from_str(data).ok()?),
        Kind::MessageRemoved => {
            let mut flat: FlatData<'_> = serde_json::from_str(data).ok()?;
            let message_id = first_non_empty([flat.message_id.take()])?;
            Some(Update::new(message_id, None).removing_message())
        }
        Kind::PartRemoved => {
            let mut flat: FlatData<'_> = serde_json::from_str(data).ok()?;
            let message_id = first_non_empty([flat.message_id.take()])?;
            let part_id = first_non_empty([flat.part_id.take()])?;
            let part = PartUpdate {
                part_id: Some(part_id),
                change: PartChange::Removed,
            };
            Some(Update::new(message_id, Some(part)))
        }
    }
}

fn message_update<'a>(
    raw: &mut MessageData<'a>,
    finishes: bool,
    announces: bool,
) -> Option<Update<'a>> {
    let (info_id, info_role, info_finished) = match raw.info.as_mut() {
        Some(info) => (info.id.take(), info.role.take(), info.says_finished()),
        None => (None, None, false),
    };
    let user_appears = announces && info_role.as_ref().is_some_and(|role| role.0 == "user");
    let (part_message_id, part_own_id) = match raw.part.as_mut() {
        Some(part) => (part.message_id.take(), part.id.take()),
        None => (None, None),
    };
    let message_id = first_non_empty([info_id, raw.message_id.take(), part_message_id])?;
    let role = first_non_empty([info_role, raw.role.take()]);
    let part_id = first_non_empty([part_own_id, raw.part_id.take()]);
    let delta = raw.delta.take();
    let change = match raw.part.as_mut() {
        Some(part) => part_change(part, delta, part_id.is_some()),
        None => delta.map(|Text(piece)| PartChange::Delta { piece, live: false }),
    };
    let part = change.map(|change| PartUpdate { part_id, change });
    Some(Update {
        finishes: finishes || info_finished || user_appears,
        role,
        ..Update::new(message_id, part)
    })
}

/// A part's change: a text part's full text (else the older spellings'
/// `delta` beside it), a tool's line, or nothing said. Parts other than
/// text need an id: nothing else could refer to them.
fn part_change<'a>(
    part: &mut RawPart<'a>,
    delta: Option<Text<'a>>,
    has_id: bool,
) -> Option<PartChange<'a>> {
    match part.kind {
        None | Some(PartType::Text) => {}
        Some(PartType::Tool) if has_id => {
            return Some(ToolCall::from_part(part).map_or(PartChange::Hidden, PartChange::Tool));
        }
        Some(_) => return has_id.then_some(PartChange::Hidden),
    }
    if part.synthetic == Some(true) || part.ignored == Some(true) {
        return Some(PartChange::Hidden);
    }
    match (part.text.take(), delta) {
        (Some(Text(full)), delta) => Some(PartChange::Text {
            full,
            // Text without timing (a user's, the older spellings') is whole.
            ended: part.time.as_ref().is_none_or(|time| time.end.is_some()),
            streamed: delta.is_some(),
        }),
        (None, Some(Text(piece))) => Some(PartChange::Delta { piece, live: false }),
        (None, None) => None,
    }
}

/// kilo's `message.part.delta`: a piece of a part's `text` field.
fn delta_update<'a>(raw: &mut FlatData<'a>) -> Option<Update<'a>> {
    if raw.field.as_ref().is_some_and(|field| !field.is_text) {
        return None;
    }
    let message_id = first_non_empty([raw.message_id.take()])?;
    let Text(piece) = raw.delta.take()?;
    let part = PartUpdate {
        part_id: first_non_empty([raw.part_id.take()]),
        change: PartChange::Delta { piece, live: true },
    };
    Some(Update::new(message_id, Some(part)))
}

impl<'a> Update<'a> {
    fn new(message_id: Cow<'a, str>, part: Option<PartUpdate<'a>>) -> Self {
        Self {
            message_id,
            role: None,
            part,
            finishes: false,
            removes_message: false,
        }
    }

    fn removing_message(self) -> Self {
        Self {
            removes_message: true,
            ..self
        }
    }
}

fn first_non_empty<const N: usize>(candidates: [Option<Text<'_>>; N]) -> Option<Cow<'_, str>> {
    candidates
        .into_iter()
        .flatten()
        .map(|text| text.0)
        .find(|text| !text.is_empty())
}
