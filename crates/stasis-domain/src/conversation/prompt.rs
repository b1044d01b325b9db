//! The prompt a dispatch hands to an agent: the prior conversation in a
//! wrapper, then the newest user text.
//!
//! ```text
//! <prior-conversation>
//! user: first question
//!
//! assistant (unfinished): half an answ
//! </prior-conversation>
//!
//! the newest user text
//! ```
//!
//! Each turn is `role: content` (`role (unfinished): content` for a message
//! that never ended), turns separated by a blank line. With no prior turns
//! there is no wrapper, only the newest text.

use super::{PriorConversation, Turn};

const OPEN: &str = "<prior-conversation>";
const CLOSE: &str = "</prior-conversation>";
const TAG_NAME: &str = "prior-conversation";

/// The prompt for `conversation`.
///
/// With `newest_user_text`, every turn is wrapped and the text follows.
/// Without it, a complete `user` last turn is the newest text (the message
/// that caused the dispatch, already in the log) and the turns before it are
/// wrapped; otherwise every turn is wrapped and nothing follows.
///
/// The rendered turns go through [`escape_wrapper_tags`], so no turn (nor
/// two adjacent ones) can close the wrapper early or open a fake one. The
/// newest text is the user's own and goes in verbatim, after the wrapper.
pub fn dispatch_prompt(conversation: &PriorConversation, newest_user_text: Option<&str>) -> String {
    let (prior, newest) = match newest_user_text {
        Some(text) => (conversation.turns.as_slice(), Some(text)),
        None => split_newest_user_turn(&conversation.turns),
    };
    let newest = newest.unwrap_or_default();
    if prior.is_empty() {
        return newest.to_owned();
    }
    // The turns are escaped as one text, so a tag split across two turns
    // (a content ending in `<`, a role `prior-conversation`) is caught too.
    // The framing itself has no `<`.
    let mut body = String::with_capacity(body_len(prior));
    for (position, turn) in prior.iter().enumerate() {
        if position > 0 {
            body.push('\n');
        }
        push_turn(&mut body, turn);
    }
    let mut prompt =
        String::with_capacity(OPEN.len() + body.len() + CLOSE.len() + newest.len() + 16);
    prompt.push_str(OPEN);
    prompt.push('\n');
    escape_into(&mut prompt, &body);
    prompt.push_str(CLOSE);
    if !newest.is_empty() {
        prompt.push_str("\n\n");
        prompt.push_str(newest);
    }
    prompt
}

/// The turns before a complete last `user` turn, and its content.
fn split_newest_user_turn(turns: &[Turn]) -> (&[Turn], Option<&str>) {
    match turns.split_last() {
        Some((last, before)) if last.role == "user" && !last.unfinished => {
            (before, Some(last.content.as_str()))
        }
        _ => (turns, None),
    }
}

fn push_turn(body: &mut String, turn: &Turn) {
    body.push_str(&turn.role);
    if turn.unfinished {
        body.push_str(" (unfinished)");
    }
    body.push_str(": ");
    body.push_str(&turn.content);
    body.push('\n');
}

/// The unescaped body's exact length.
fn body_len(turns: &[Turn]) -> usize {
    turns.iter().fold(0, |len, turn| {
        let unfinished = if turn.unfinished { 13 } else { 0 };
        len + turn.role.len() + unfinished + 2 + turn.content.len() + 2
    })
}

/// `text` with the `<` and `>` of every `prior-conversation` tag written as
/// `&lt;`/`&gt;`, so it cannot open or close the wrapper.
///
/// A tag is matched case-insensitively, with ASCII whitespace allowed after
/// `<`, around a `/`, and before `>`: `</ Prior-Conversation >` is escaped
/// too. A tag with more after its name (`<prior-conversation x="1">`) gets
/// its `<` escaped, which is enough to defuse it. Nothing else changes.
pub fn escape_wrapper_tags(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    escape_into(&mut escaped, text);
    escaped
}

fn escape_into(out: &mut String, text: &str) {
    let bytes = text.as_bytes();
    let mut copied = 0;
    let mut search = 0;
    while let Some(offset) = text.get(search..).and_then(|rest| rest.find('<')) {
        let start = search + offset;
        search = start + 1;
        let Some(name_end) = tag_name_end(bytes, start) else {
            continue;
        };
        out.push_str(text.get(copied..start).unwrap_or_default());
        out.push_str("&lt;");
        let close = skip_closing(bytes, name_end);
        match close {
            Some(gt) => {
                out.push_str(text.get(start + 1..gt).unwrap_or_default());
                out.push_str("&gt;");
                copied = gt + 1;
            }
            None => copied = start + 1,
        }
        search = copied.max(search);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
}

/// Where the tag name ends, if a `prior-conversation` tag starts at the `<`
/// at `start`.
fn tag_name_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = skip_whitespace(bytes, start + 1);
    if bytes.get(at) == Some(&b'/') {
        at = skip_whitespace(bytes, at + 1);
    }
    let name_end = at + TAG_NAME.len();
    let name = bytes.get(at..name_end)?;
    if !name.eq_ignore_ascii_case(TAG_NAME.as_bytes()) {
        return None;
    }
    // `<prior-conversations>` is another word, not our tag.
    match bytes.get(name_end) {
        Some(&next) if next.is_ascii_alphanumeric() || next == b'-' || next == b'_' => None,
        _ => Some(name_end),
    }
}

/// The position of the `>` closing a tag whose name ends at `at`, allowing
/// whitespace and one `/` before it.
fn skip_closing(bytes: &[u8], at: usize) -> Option<usize> {
    let mut at = skip_whitespace(bytes, at);
    if bytes.get(at) == Some(&b'/') {
        at = skip_whitespace(bytes, at + 1);
    }
    (bytes.get(at) == Some(&b'>')).then_some(at)
}

fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}
