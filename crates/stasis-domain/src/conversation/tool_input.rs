//! A tool's `input`, read down to the few words that say what the call
//! does; everything else in it is skipped unread.

use super::text::Text;
use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// What a tool's `input` says it does, in a few words: its `description`,
/// else its `command`, else its first non-empty string field (a path, a
/// pattern, a URL). Input that is not an object says nothing.
pub(super) struct InputSummary<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for InputSummary<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(Summarize { nested: false })
            .map(InputSummary)
    }
}

/// One field's value in the input: a non-empty string kept, anything else
/// skipped.
struct FieldValue<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for FieldValue<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(Summarize { nested: true })
            .map(FieldValue)
    }
}

/// Reads the input object (`nested: false`) or one of its values.
struct Summarize {
    nested: bool,
}

impl<'de> Visitor<'de> for Summarize {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a tool's input")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if self.nested {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        let (mut description, mut command, mut first) = (None, None, None);
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let FieldValue(value) = map.next_value()?;
            let Some(value) = value else { continue };
            match key.as_ref() {
                "description" => description = Some(value),
                "command" => command = Some(value),
                _ if first.is_none() => first = Some(value),
                _ => {}
            }
        }
        Ok(description.or(command).or(first))
    }

    fn visit_borrowed_str<E: serde::de::Error>(self, value: &'de str) -> Result<Self::Value, E> {
        let keep = self.nested && !value.trim().is_empty();
        Ok(keep.then_some(Cow::Borrowed(value)))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        let keep = self.nested && !value.trim().is_empty();
        Ok(keep.then(|| Cow::Owned(value.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
}
