//! A tool part as one short line of its assistant turn:
//! `[tool bash: Print hi — completed]`.

use super::{
    raw::{RawPart, RawToolState},
    text::Text,
    tool_input::InputSummary,
};
use std::borrow::Cow;

/// Characters of a tool's name kept in its line.
pub const TOOL_NAME_MAX_CHARS: usize = 40;
/// Characters of a tool's title or input summary kept in its line.
pub const TOOL_SUMMARY_MAX_CHARS: usize = 80;

/// What a tool part says, borrowed from its event.
pub(super) struct ToolCall<'a> {
    name: Cow<'a, str>,
    summary: Option<Cow<'a, str>>,
    status: &'static str,
}

impl<'a> ToolCall<'a> {
    /// The call a `type: "tool"` part describes, or `None` when it names no
    /// tool.
    pub fn from_part(part: &mut RawPart<'a>) -> Option<Self> {
        let name = part.tool.take().map(|Text(name)| name);
        let name = name.filter(|name| !name.is_empty())?;
        let (status, summary) = match part.state.take() {
            Some(state) => {
                let RawToolState {
                    status,
                    title,
                    input,
                } = *state;
                let title = title.map(|Text(title)| title);
                let input = input.and_then(|InputSummary(summary)| summary);
                let summary = title.filter(|t| !t.trim().is_empty()).or(input);
                (status_word(status.as_ref().map(|s| s.0.as_ref())), summary)
            }
            None => (status_word(None), None),
        };
        Some(Self {
            name,
            summary,
            status,
        })
    }

    /// Writes the line into `out` (which the caller has cleared).
    pub fn render_into(&self, out: &mut String) {
        out.push_str("[tool ");
        push_squeezed(out, &self.name, TOOL_NAME_MAX_CHARS);
        if let Some(summary) = &self.summary {
            out.push_str(": ");
            push_squeezed(out, summary, TOOL_SUMMARY_MAX_CHARS);
        }
        out.push_str(" — ");
        out.push_str(self.status);
        out.push(']');
    }
}

/// kilo's statuses as they are; anything else is `unknown`.
fn status_word(status: Option<&str>) -> &'static str {
    match status {
        Some("pending") => "pending",
        Some("running") => "running",
        Some("completed") => "completed",
        Some("error") => "error",
        _ => "unknown",
    }
}

/// `text` on one line (each run of whitespace one space, none at either
/// end), at most `max_chars` characters, the last one `…` when cut.
fn push_squeezed(out: &mut String, text: &str, max_chars: usize) {
    if text.len() <= max_chars && is_squeezed_ascii(text) {
        // The usual short title: as it is.
        out.push_str(text);
        return;
    }
    let chars = text
        .split_whitespace()
        .flat_map(|word| std::iter::once(' ').chain(word.chars()))
        .skip(1);
    for (written, next) in chars.enumerate() {
        if written == max_chars {
            if written > 0 {
                out.pop();
            }
            out.push('…');
            return;
        }
        out.push(next);
    }
}

/// ASCII already on one line: no whitespace but single spaces between
/// words.
fn is_squeezed_ascii(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge_space = |byte: Option<&u8>| byte.is_some_and(u8::is_ascii_whitespace);
    text.is_ascii()
        && !edge_space(bytes.first())
        && !edge_space(bytes.last())
        && bytes.iter().all(|&b| b == b' ' || !b.is_ascii_whitespace())
        && !bytes.windows(2).any(|pair| pair == b"  ")
}
