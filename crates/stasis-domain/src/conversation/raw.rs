//! The fields of an event's data that the rebuild reads, borrowed from the
//! event's JSON (strings with escapes are the only copies). Every other field
//! is skipped unread; a field of the wrong type makes the event malformed.

use super::tool::InputSummary;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};
use std::borrow::Cow;
use std::fmt;

/// One event's data, whatever its type: each type uses some of the fields.
#[derive(Deserialize)]
pub(super) struct RawData<'a> {
    #[serde(borrow)]
    pub info: Option<RawInfo<'a>>,
    #[serde(borrow)]
    pub message_id: Option<Text<'a>>,
    #[serde(borrow, rename = "messageID")]
    pub message_id_camel: Option<Text<'a>>,
    #[serde(borrow)]
    pub role: Option<Text<'a>>,
    #[serde(borrow)]
    pub part: Option<RawPart<'a>>,
    #[serde(borrow)]
    pub part_id: Option<Text<'a>>,
    #[serde(borrow, rename = "partID")]
    pub part_id_camel: Option<Text<'a>>,
    #[serde(borrow)]
    pub delta: Option<Text<'a>>,
    #[serde(borrow)]
    pub field: Option<Text<'a>>,
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
    #[serde(borrow, rename = "type")]
    pub kind: Option<Text<'a>>,
    #[serde(borrow, alias = "messageID")]
    pub message_id: Option<Text<'a>>,
    #[serde(borrow)]
    pub text: Option<Text<'a>>,
    pub synthetic: Option<bool>,
    pub ignored: Option<bool>,
    pub time: Option<Times>,
    #[serde(borrow)]
    pub tool: Option<Text<'a>>,
    #[serde(borrow)]
    pub state: Option<RawToolState<'a>>,
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

/// A JSON string, borrowed from the input unless it had escapes.
///
/// `Option<Cow<str>>` would always copy: serde only borrows into a bare
/// `Cow<str>` field.
pub(super) struct Text<'a>(pub Cow<'a, str>);

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
