//! Reading one event into what it does to a message.
//!
//! Each event's JSON is parsed once, into small structs that borrow their
//! strings from the event (copying only strings with escapes), because a
//! rebuild reads thousands of events and must cost about as much as reading
//! them.

use crate::event_log::Event;
use serde::Deserialize;
use serde::de::{Deserializer, Visitor};
use std::borrow::Cow;
use std::fmt;

/// What one event says about one message.
pub(super) struct MessageUpdate<'a> {
    /// The message's id; never empty.
    pub message_id: Cow<'a, str>,
    /// The role, when the event names one.
    pub role: Option<Cow<'a, str>>,
    /// The text change, when the event carries text.
    pub text: Option<PartText<'a>>,
    /// The event ends the message.
    pub completes: bool,
}

/// New text for one part of a message.
pub(super) struct PartText<'a> {
    /// The part's id; `None` (also for `""`) names the one unnamed part of
    /// a message.
    pub part_id: Option<Cow<'a, str>>,
    /// Whether the text replaces the part's or extends it.
    pub change: TextChange<'a>,
}

/// How a part's text changes.
pub(super) enum TextChange<'a> {
    /// The part's full text so far.
    Replace(Cow<'a, str>),
    /// A streamed piece to append.
    Append(Cow<'a, str>),
}

/// What the event's type makes of it: `None` for types that are not about
/// messages, else whether it ends the message.
fn completes_message(event_type: &str) -> Option<bool> {
    match event_type {
        "message.created" | "message.updated" | "message_part.updated" | "message.part.updated" => {
            Some(false)
        }
        "message.completed" | "assistant.completed" => Some(true),
        _ => None,
    }
}

/// The update `event` carries, or `None` when it is not a message event or
/// is malformed.
pub(super) fn parse(event: &Event) -> Option<MessageUpdate<'_>> {
    let completes = completes_message(&event.event_type)?;
    // Serde would also read a JSON array positionally into the struct.
    if !event.data.trim_start().starts_with('{') {
        return None;
    }
    let raw: RawData<'_> = serde_json::from_str(&event.data).ok()?;
    let (info_id, info_role) = match raw.info {
        Some(info) => (info.id, info.role),
        None => (None, None),
    };
    let part = raw.part.unwrap_or_default();
    let message_id = first_non_empty([info_id, raw.message_id, part.message_id])?;
    let role = first_non_empty([info_role, raw.role]);
    let part_id = part.id.or(raw.part_id).filter(|id| !id.0.is_empty());
    let text = part_text(part_id, part.kind, part.text, raw.delta);
    Some(MessageUpdate {
        message_id,
        role,
        text,
        completes,
    })
}

fn part_text<'a>(
    part_id: Option<Text<'a>>,
    kind: Option<Text<'a>>,
    full: Option<Text<'a>>,
    delta: Option<Text<'a>>,
) -> Option<PartText<'a>> {
    // Reasoning, tool calls and the like are not what was said.
    if kind.is_some_and(|kind| kind.0 != "text") {
        return None;
    }
    let change = match (full, delta) {
        (Some(full), _) => TextChange::Replace(full.0),
        (None, Some(delta)) => TextChange::Append(delta.0),
        (None, None) => return None,
    };
    Some(PartText {
        part_id: part_id.map(|id| id.0),
        change,
    })
}

fn first_non_empty<const N: usize>(candidates: [Option<Text<'_>>; N]) -> Option<Cow<'_, str>> {
    candidates
        .into_iter()
        .flatten()
        .map(|text| text.0)
        .find(|text| !text.is_empty())
}

/// The fields of an event's data that matter here; all others are skipped.
#[derive(Deserialize)]
struct RawData<'a> {
    #[serde(borrow)]
    info: Option<RawInfo<'a>>,
    #[serde(borrow)]
    message_id: Option<Text<'a>>,
    #[serde(borrow)]
    role: Option<Text<'a>>,
    #[serde(borrow)]
    part: Option<RawPart<'a>>,
    #[serde(borrow)]
    part_id: Option<Text<'a>>,
    #[serde(borrow)]
    delta: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct RawInfo<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    role: Option<Text<'a>>,
}

#[derive(Default, Deserialize)]
struct RawPart<'a> {
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(borrow)]
    text: Option<Text<'a>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Text<'a>>,
    #[serde(borrow, alias = "messageID")]
    message_id: Option<Text<'a>>,
}

/// A JSON string, borrowed from the input unless it had escapes.
///
/// `Option<Cow<str>>` would always copy: serde only borrows into a bare
/// `Cow<str>` field.
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor).map(Text)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value))
    }
}
