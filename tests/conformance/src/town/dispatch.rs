//! A dispatch's documented shape and its `<prior-conversation>` prompt.

use super::assert_keys;
use crate::Value;

/// Asserts `dispatch` has the documented shape, and returns its prompt.
pub fn assert_dispatch_shape(dispatch: &Value) -> String {
    assert_keys(
        dispatch,
        &[
            "agent_id",
            "rig_id",
            "role",
            "checkpoint",
            "prior_conversation",
            "prompt",
            "snapshot",
            "event_watermark",
        ],
    );
    assert_keys(
        &dispatch["prior_conversation"],
        &["turns", "omitted_turns", "token_estimate", "truncated"],
    );
    let watermark = &dispatch["event_watermark"];
    assert!(
        watermark.is_u64() || watermark.is_null(),
        "event_watermark is a seq: {dispatch}"
    );
    dispatch["prompt"]
        .as_str()
        .unwrap_or_else(|| panic!("a dispatch's prompt is a string: {dispatch}"))
        .to_owned()
}

/// The wrapper's opening tag.
pub const OPEN: &str = "<prior-conversation>";
/// The wrapper's closing tag.
pub const CLOSE: &str = "</prior-conversation>";

/// Asserts `prompt` is one `<prior-conversation>` wrapper holding each of
/// `prior` (in order), followed by `newest` (which the wrapper does not
/// hold); returns the wrapper's inside.
pub fn assert_prompt(prompt: &str, prior: &[&str], newest: &str) -> String {
    assert_eq!(
        prompt.matches(OPEN).count(),
        1,
        "one opening tag: {prompt:?}"
    );
    assert_eq!(
        prompt.matches(CLOSE).count(),
        1,
        "one closing tag: {prompt:?}"
    );
    let start = prompt.find(OPEN).unwrap_or_default() + OPEN.len();
    let end = prompt.find(CLOSE).unwrap_or_default();
    assert!(
        start <= end,
        "the wrapper opens before it closes: {prompt:?}"
    );
    let inside = &prompt[start..end];
    let mut from = 0;
    for text in prior {
        let at = inside[from..]
            .find(text)
            .unwrap_or_else(|| panic!("the wrapper should hold {text:?} (in order): {prompt:?}"));
        from += at + text.len();
    }
    assert!(
        !inside.contains(newest),
        "the newest user text follows the wrapper, not inside it: {prompt:?}"
    );
    let after = &prompt[end + CLOSE.len()..];
    assert!(
        after.trim_start().starts_with(newest) && prompt.ends_with(newest),
        "the prompt ends with the newest user text {newest:?} after the wrapper: {prompt:?}"
    );
    inside.to_owned()
}
