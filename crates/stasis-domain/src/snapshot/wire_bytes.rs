//! Bytes inside JSON calls (the edge forwards calls to Durable Objects as
//! JSON) travel as base64, not as arrays of numbers.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Deserialize, Deserializer, Serializer};

/// Serialises `Option<Vec<u8>>` as an optional base64 string.
pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, out: S) -> Result<S::Ok, S::Error> {
    match bytes {
        Some(bytes) => out.serialize_some(&STANDARD.encode(bytes)),
        None => out.serialize_none(),
    }
}

/// Reads what [`serialize`] wrote.
pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Vec<u8>>, D::Error> {
    let text: Option<String> = Option::deserialize(input)?;
    text.map(|t| STANDARD.decode(t).map_err(serde::de::Error::custom))
        .transpose()
}
