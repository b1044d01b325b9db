//! Documents kept as JSON text, written into a manifest as the JSON values
//! they are (not as strings), and read back from any JSON value as its
//! text. Works with serde_json only, which is the one format manifests
//! travel in (HTTP, the components' calls, the edge's objects).

use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error as _, ser::Error as _};
use serde_json::value::RawValue;

/// Writes stored JSON text as that JSON value, checked on the way.
pub(super) fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
    let raw: &RawValue = serde_json::from_str(text)
        .map_err(|err| S::Error::custom(format!("a stored document is not JSON: {err}")))?;
    raw.serialize(serializer)
}

/// Reads any JSON value as its text.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let raw = Box::<RawValue>::deserialize(deserializer)?;
    if raw.get().is_empty() {
        return Err(D::Error::custom("expected a JSON value"));
    }
    Ok(raw.get().to_owned())
}

/// The same for an optional document; `null` is `None`.
pub(super) mod option {
    use super::*;

    pub(in super::super) fn serialize<S: Serializer>(
        text: &Option<String>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match text {
            Some(text) => super::serialize(text, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        Ok(Option::<Box<RawValue>>::deserialize(deserializer)?.map(|raw| raw.get().to_owned()))
    }
}
