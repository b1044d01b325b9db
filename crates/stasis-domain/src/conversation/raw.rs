//! The fields of an event's data that the rebuild reads, borrowed from the
//! event's JSON (strings with escapes are the only copies). Every other field
//! is skipped unread; a field of the wrong type makes the event malformed.

use super::{text::Text, tool_input::InputSummary};
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};
use std::fmt;

/// The data of an event that carries a message's `info` and maybe a part
/// (`message.updated`, `message.part.updated`, the older spellings). Kept
/// small: it is moved a few times per event while it is parsed.
#[derive(Deserialize)]
pub(super) struct MessageData<'a> {
    /// Boxed to keep the whole under 256 bytes, which memcpy moves in far
    /// fewer instructions.
    #[serde(borrow)]
    pub info: Option<Box<RawInfo<'a>>>,
    /// The design text's `message_id` (kilo's spelling, `messageID`, is
    /// read too; an event with both is malformed).
    #[serde(borrow, alias = "messageID")]
    pub message_id: Option<Text<'a>>,
    #[serde(borrow)]
    pub role: Option<Text<'a>>,
    #[serde(borrow)]
    pub part: Option<RawPart<'a>>,
    /// The design text's `part_id` (or `partID`).
    #[serde(borrow, alias = "partID")]
    pub part_id: Option<Text<'a>>,
    #[serde(borrow)]
    pub delta: Option<Text<'a>>,
}

/// The flat data of kilo's `message.part.delta`, `message.removed` and
/// `message.part.removed`.
#[derive(Deserialize)]
pub(super) struct FlatData<'a> {
    #[serde(borrow, rename = "messageID", alias = "message_id")]
    pub message_id: Option<Text<'a>>,
    #[serde(borrow, rename = "partID", alias = "part_id")]
    pub part_id: Option<Text<'a>>,
    /// Which field of the part a delta extends.
    pub field: Option<FieldName>,
    #[serde(borrow)]
    pub delta: Option<Text<'a>>,
}

/// A delta's `field`: only whether it is `text` matters.
pub(super) struct FieldName {
    pub is_text: bool,
}

impl<'de> Deserialize<'de> for FieldName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let is_text = deserializer.deserialize_str(Is("text"))?;
        Ok(Self { is_text })
    }
}

/// A message's `info`.
#[derive(Deserialize)]
pub(super) struct RawInfo<'a> {
    #[serde(borrow)]
    pub id: Option<Text<'a>>,
    #[serde(borrow)]
    pub role: Option<Text<'a>>,
    pub time: Option<Times>,
    pub finish: Option<IgnoredAny>,
    pub error: Option<IgnoredAny>,
}

impl RawInfo<'_> {
    /// kilo has finished writing the message: it completed, stopped for a
    /// reason, or failed.
    pub fn says_finished(&self) -> bool {
        self.time
            .as_ref()
            .is_some_and(|time| time.completed.is_some())
            || self.finish.is_some()
            || self.error.is_some()
    }
}

/// `info.time` (`created`, `completed`) or `part.time` (`start`, `end`):
/// only whether the ending one is set matters.
#[derive(Deserialize)]
pub(super) struct Times {
    pub completed: Option<IgnoredAny>,
    pub end: Option<IgnoredAny>,
}

/// A message part.
#[derive(Default, Deserialize)]
pub(super) struct RawPart<'a> {
    #[serde(borrow)]
    pub id: Option<Text<'a>>,
    #[serde(rename = "type")]
    pub kind: Option<PartType>,
    #[serde(borrow, alias = "messageID")]
    pub message_id: Option<Text<'a>>,
    #[serde(borrow)]
    pub text: Option<Text<'a>>,
    pub synthetic: Option<bool>,
    pub ignored: Option<bool>,
    pub time: Option<Times>,
    #[serde(borrow)]
    pub tool: Option<Text<'a>>,
    /// Boxed: only tool parts have one, and every event's data moves
    /// through a few copies while it is parsed.
    #[serde(borrow)]
    pub state: Option<Box<RawToolState<'a>>>,
}

/// A part's `type`, as far as the rebuild distinguishes them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum PartType {
    Text,
    Tool,
    /// `reasoning`, `step-start`, `step-finish`, `snapshot`, `patch`,
    /// `file`, and whatever else: not conversation.
    Other,
}

impl<'de> Deserialize<'de> for PartType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(Name)
    }
}

/// Reads a string into a [`PartType`].
struct Name;

impl Visitor<'_> for Name {
    type Value = PartType;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a part type")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<PartType, E> {
        Ok(match value {
            "text" => PartType::Text,
            "tool" => PartType::Tool,
            _ => PartType::Other,
        })
    }
}

/// Reads a string into whether it is the one given.
struct Is(&'static str);

impl Visitor<'_> for Is {
    type Value = bool;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<bool, E> {
        Ok(value == self.0)
    }
}

/// A tool part's `state`.
#[derive(Deserialize)]
pub(super) struct RawToolState<'a> {
    #[serde(borrow)]
    pub status: Option<Text<'a>>,
    #[serde(borrow)]
    pub title: Option<Text<'a>>,
    #[serde(borrow)]
    pub input: Option<InputSummary<'a>>,
}
