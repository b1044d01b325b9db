//! Making an event over stasis's 1 MiB event limit fit, so that it does not poison its batch.
//!
//! The largest strings of its data are cut first (a tool's output, a file's content), each
//! ending in [`marker`]: `…[cut by stasis sidecar: kept K of N bytes]`, until the data fits.
//! When strings alone cannot make it fit (a huge array of numbers), the data is replaced by
//! `{"sessionID": <kept when it was a string>, "stasis_cut": {"original_bytes": N, "reason"}}`.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// stasis refuses an event whose data, type and session id pass 1 MiB.
pub(crate) const MAX_EVENT_BYTES: usize = 1024 * 1024;
/// The room for data: the limit less a margin for the type and session id (subtracted too).
pub(crate) const MAX_DATA_BYTES: usize = MAX_EVENT_BYTES - 1024;
/// Room the marker needs at most (its numbers included).
const MARKER_ROOM: usize = 96;

/// The text that ends a cut string.
pub(crate) fn marker(kept: usize, original: usize) -> String {
    format!("…[cut by stasis sidecar: kept {kept} of {original} bytes]")
}

/// `data` made to fit in `room` bytes of JSON (see the module doc).
pub(crate) fn fit(data: &RawValue, room: usize) -> Result<Box<RawValue>, String> {
    let original = data.get().len();
    let mut value: Value = serde_json::from_str(data.get()).map_err(|e| e.to_string())?;
    let session = value
        .get("sessionID")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut strings = Vec::new();
    collect_strings(&value, &mut String::new(), &mut strings);
    strings.sort_by_key(|s| std::cmp::Reverse(s.0));
    let mut size = original;
    for (len, pointer) in strings {
        if size <= room {
            break;
        }
        let cut = (size - room).saturating_add(MARKER_ROOM);
        if let Some(Value::String(text)) = value.pointer_mut(&pointer) {
            cut_string(text, len.saturating_sub(cut));
        }
        size = encoded_len(&value)?;
    }
    if size > room {
        value = stub(session.as_deref(), original);
    }
    serde_json::value::to_raw_value(&value).map_err(|e| e.to_string())
}

/// Shortens `text` to at most `keep` bytes (on a character boundary) and appends the marker.
fn cut_string(text: &mut String, keep: usize) {
    let original = text.len();
    let mut end = keep.min(original);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&marker(end, original));
}

/// Every string in `value` as (its length, its JSON pointer).
fn collect_strings(value: &Value, pointer: &mut String, out: &mut Vec<(usize, String)>) {
    match value {
        Value::String(text) => out.push((text.len(), pointer.clone())),
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                descend(pointer, &index.to_string(), |p| {
                    collect_strings(item, p, out)
                });
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let token = key.replace('~', "~0").replace('/', "~1");
                descend(pointer, &token, |p| collect_strings(item, p, out));
            }
        }
        _ => {}
    }
}

fn descend(pointer: &mut String, token: &str, visit: impl FnOnce(&mut String)) {
    let len = pointer.len();
    pointer.push('/');
    pointer.push_str(token);
    visit(pointer);
    pointer.truncate(len);
}

fn encoded_len(value: &Value) -> Result<usize, String> {
    serde_json::to_vec(value)
        .map(|bytes| bytes.len())
        .map_err(|e| e.to_string())
}

#[derive(Serialize)]
struct Stub<'a> {
    #[serde(rename = "sessionID", skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    stasis_cut: StubReason,
}

#[derive(Serialize)]
struct StubReason {
    original_bytes: usize,
    reason: &'static str,
}

/// The stand-in for data that no cut of its strings could make fit.
fn stub(session_id: Option<&str>, original: usize) -> Value {
    let stub = Stub {
        session_id,
        stasis_cut: StubReason {
            original_bytes: original,
            reason: "over stasis's 1 MiB event limit even with its strings cut",
        },
    };
    serde_json::to_value(stub).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used, reason = "tests fail loudly")]

    use super::*;

    fn raw(value: &Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(value).expect("encodes")
    }

    #[test]
    fn the_largest_string_is_cut_with_a_marker_and_the_rest_kept() {
        let big = "x".repeat(2 * MAX_EVENT_BYTES);
        let data = serde_json::json!({
            "sessionID": "ses_1",
            "part": {"type": "tool", "state": {"output": big, "title": "ls"}},
        });
        let fitted = fit(&raw(&data), MAX_DATA_BYTES).expect("fits");
        assert!(
            fitted.get().len() <= MAX_DATA_BYTES,
            "{}",
            fitted.get().len()
        );
        let value: Value = serde_json::from_str(fitted.get()).expect("JSON");
        assert_eq!(value["sessionID"], "ses_1");
        assert_eq!(value["part"]["state"]["title"], "ls");
        let output = value["part"]["state"]["output"].as_str().expect("string");
        let kept = output.find('…').expect("a marker");
        assert!(kept > MAX_DATA_BYTES - 4096, "most of it is kept: {kept}");
        assert!(
            output.ends_with(&marker(kept, 2 * MAX_EVENT_BYTES)),
            "{}",
            &output[kept..]
        );
    }

    #[test]
    fn several_strings_are_cut_when_one_is_not_enough_and_characters_stay_whole() {
        let data = serde_json::json!(["é".repeat(300_000), "ü".repeat(300_000), "small"]);
        let fitted = fit(&raw(&data), 500_000).expect("fits");
        assert!(fitted.get().len() <= 500_000);
        let value: Vec<String> = serde_json::from_str(fitted.get()).expect("strings");
        assert!(value[0].contains("…[cut by stasis sidecar") && value[1].contains("…[cut"));
        assert_eq!(value[2], "small");
    }

    #[test]
    fn data_that_strings_cannot_shrink_becomes_a_stub_naming_its_session() {
        let numbers: Vec<u64> = (0..300_000).collect();
        let data = serde_json::json!({"sessionID": "ses_9", "numbers": numbers});
        let original = raw(&data).get().len();
        let fitted = fit(&raw(&data), MAX_DATA_BYTES).expect("fits");
        let value: Value = serde_json::from_str(fitted.get()).expect("JSON");
        assert_eq!(value["sessionID"], "ses_9");
        assert_eq!(value["stasis_cut"]["original_bytes"], original);
    }

    #[test]
    fn keys_with_slashes_and_tildes_are_reached() {
        let data = serde_json::json!({"a/b~c": "y".repeat(10_000)});
        let fitted = fit(&raw(&data), 1_000).expect("fits");
        assert!(fitted.get().len() <= 1_000);
        assert!(fitted.get().contains("…[cut by stasis sidecar"));
    }
}
