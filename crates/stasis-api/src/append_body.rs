//! Parsing an append body strictly: the body and each event must be JSON
//! objects (serde's derive would also take arrays in field order), and a
//! refusal names the field at fault, e.g. `events[3].type`.
//!
//! Event data is borrowed as raw JSON text and stored verbatim, so a body
//! is parsed once and no event payload is re-encoded.

use crate::error::ApiError;
use serde::de::{
    self, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;
use stasis_domain::event_log::{AppendBatch, NewEvent, ProducerStamp};
use std::{borrow::Cow, cell::RefCell, fmt};

/// Parses `{"events": [...], "producer_id"?, "producer_seq"?}`.
pub fn parse(body: &[u8]) -> Result<AppendBatch, ApiError> {
    let at = RefCell::new(String::new());
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = BodySeed { at: &at }
        .deserialize(&mut de)
        .and_then(|batch| de.end().map(|()| batch));
    parsed.map_err(|err| {
        let at = at.borrow();
        match err.classify() {
            serde_json::error::Category::Data if !at.is_empty() => {
                ApiError::invalid_request(format!("{at}: {err}"))
            }
            serde_json::error::Category::Data => {
                ApiError::invalid_request(format!("the body: {err}"))
            }
            _ => ApiError::new(
                http::StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not valid JSON: {err}"),
            ),
        }
    })
}

/// Where the parser is, for messages; set before each field is read.
struct BodySeed<'p> {
    at: &'p RefCell<String>,
}

impl<'de> DeserializeSeed<'de> for BodySeed<'_> {
    type Value = AppendBatch;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<AppendBatch, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BodySeed<'_> {
    type Value = AppendBatch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"an object {"events": [...]}"#)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AppendBatch, A::Error> {
        let (mut events, mut producer_id, mut producer_seq) = (None, None::<String>, None::<u64>);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            *self.at.borrow_mut() = key.to_string();
            match key.as_ref() {
                "events" => events = Some(map.next_value_seed(EventsSeed { at: self.at })?),
                "producer_id" => producer_id = map.next_value()?,
                "producer_seq" => producer_seq = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let producer = match (producer_id, producer_seq) {
            (Some(producer_id), Some(producer_seq)) => Some(ProducerStamp {
                producer_id,
                producer_seq,
            }),
            (None, None) => None,
            _ => {
                *self.at.borrow_mut() = "producer_id, producer_seq".into();
                return Err(A::Error::custom("these come together or not at all"));
            }
        };
        let Some(events) = events else {
            *self.at.borrow_mut() = "events".into();
            return Err(A::Error::missing_field("events"));
        };
        Ok(AppendBatch { events, producer })
    }
}

struct EventsSeed<'p> {
    at: &'p RefCell<String>,
}

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = Vec<NewEvent>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Vec<NewEvent>, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = Vec<NewEvent>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<NewEvent>, A::Error> {
        let mut events = Vec::with_capacity(seq.size_hint().unwrap_or(16).min(1024));
        loop {
            let index = events.len();
            *self.at.borrow_mut() = format!("events[{index}]");
            match seq.next_element_seed(EventSeed { at: self.at, index })? {
                Some(event) => events.push(event),
                None => break,
            }
        }
        *self.at.borrow_mut() = "events".into();
        Ok(events)
    }
}

struct EventSeed<'p> {
    at: &'p RefCell<String>,
    index: usize,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = NewEvent;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<NewEvent, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = NewEvent;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"an event object {"type": ..., "session_id"?: ..., "data"?: ...}"#)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NewEvent, A::Error> {
        let (mut event_type, mut session_id, mut data) =
            (None::<String>, None::<String>, None::<&'de RawValue>);
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            *self.at.borrow_mut() = format!("events[{}].{key}", self.index);
            match key.as_ref() {
                "type" => event_type = Some(map.next_value()?),
                "session_id" => session_id = map.next_value()?,
                "data" => data = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(event_type) = event_type else {
            *self.at.borrow_mut() = format!("events[{}].type", self.index);
            return Err(de::Error::missing_field("type"));
        };
        Ok(NewEvent {
            event_type,
            session_id,
            data: data.map_or_else(|| "null".to_owned(), |raw| raw.get().to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(body: &str) -> (String, String) {
        match parse(body.as_bytes()) {
            Ok(_) => ("accepted".into(), String::new()),
            Err(err) => (err.code, err.message),
        }
    }

    #[test]
    fn arrays_in_place_of_objects_are_refused() {
        assert_eq!(
            refusal(r#"[[{"type":"x"}],null,null]"#).0,
            "invalid_request"
        );
        let (code, message) = refusal(r#"{"events":[["x","s",1]]}"#);
        assert_eq!(code, "invalid_request");
        assert!(message.starts_with("events[0]"), "{message}");
    }

    #[test]
    fn refusals_name_the_field() {
        let (code, message) =
            refusal(r#"{"events":[{"type":"x"}],"producer_id":"p","producer_seq":-1}"#);
        assert_eq!(code, "invalid_request");
        assert!(message.starts_with("producer_seq"), "{message}");
        assert!(
            refusal(r#"{"events":[{"type":"a"},{"type":5}]}"#)
                .1
                .starts_with("events[1].type")
        );
        assert!(
            refusal(r#"{"events":[{"data":1}]}"#)
                .1
                .starts_with("events[0].type")
        );
        assert!(refusal(r#"{"nope":1}"#).1.starts_with("events"));
    }

    #[test]
    fn malformed_json_is_told_apart_from_a_wrong_shape() {
        assert_eq!(refusal(r#"{"events":[{"type":"x""#).0, "invalid_json");
        assert_eq!(
            refusal(r#"{"events":[{"type":"x"}]} trailing"#).0,
            "invalid_json"
        );
    }

    #[test]
    fn data_is_kept_verbatim_and_defaults_to_null() {
        let batch =
            parse(br#"{"events":[{"type":"x","data":{"a": [1, 2]}},{"type":"y"}],"extra":true}"#)
                .map_err(|e| e.message);
        let batch = batch.unwrap_or_else(|m| panic!("{m}"));
        assert_eq!(batch.events[0].data, r#"{"a": [1, 2]}"#);
        assert_eq!(batch.events[1].data, "null");
    }
}
