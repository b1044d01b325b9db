//! Assertions on a response's shape: an object's exact fields, a 405's
//! allowed methods, a 503's `Retry-After`.

use crate::{Reply, Value, assert_error, json};

/// The fields of a JSON object, sorted.
pub fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("expected a JSON object, got {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// Asserts `value` is an object with exactly the fields `expected`.
pub fn assert_keys(value: &Value, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|k| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(keys(value), expected, "the fields of {value}");
}

/// Asserts a 503 carries a `Retry-After` header of whole seconds equal to
/// the error's `retry_after`.
pub fn assert_retry_after(reply: &Reply, code: &str) {
    let error = assert_error(reply, 503, code);
    let header = reply
        .header("retry-after")
        .unwrap_or_else(|| panic!("a 503 carries Retry-After: {:?}", reply.headers));
    let seconds: u64 = header
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After is whole seconds: {header:?}"));
    assert_eq!(
        error.get("retry_after"),
        Some(&json!(seconds)),
        "retry_after matches the header: {error:?}"
    );
}
