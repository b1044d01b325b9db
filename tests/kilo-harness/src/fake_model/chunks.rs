//! The OpenAI streaming format: `data: {chunk}` events, then `data: [DONE]`.

use super::script::Reply;
use bytes::Bytes;
use serde::Serialize;
use std::time::Duration;

/// One SSE event of the body and the pause before it.
pub(crate) type Frame = (Duration, Bytes);

#[derive(Serialize)]
struct Chunk<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'static str,
    choices: [Choice<'a>; 1],
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    delta: Delta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<&'static str>,
}

#[derive(Default, Serialize)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<[ToolCall<'a>; 1]>,
}

#[derive(Serialize)]
struct ToolCall<'a> {
    index: u32,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'static str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct BashArguments<'a> {
    command: &'a str,
    description: &'a str,
}

/// The body's events for `reply` to the `number`-th request.
pub(crate) fn frames(reply: &Reply, number: usize) -> serde_json::Result<Vec<Frame>> {
    let id = format!("chatcmpl-{number}");
    let mut frames = Vec::new();
    let finish = match reply {
        Reply::Text { text, chunk_delay } => {
            let delay = chunk_delay.unwrap_or_default();
            for (index, word) in words(text).enumerate() {
                let delta = Delta {
                    role: (index == 0).then_some("assistant"),
                    content: Some(word),
                    ..Delta::default()
                };
                frames.push((delay, event(&chunk(&id, delta, None))?));
            }
            "stop"
        }
        // Answered before any frame (see `complete`).
        Reply::Failure { .. } => "error",
        Reply::Bash {
            command,
            description,
        } => {
            let arguments = serde_json::to_string(&BashArguments {
                command,
                description,
            })?;
            let call_id = format!("call_{number}");
            let delta = Delta {
                role: Some("assistant"),
                tool_calls: Some([ToolCall {
                    index: 0,
                    id: &call_id,
                    kind: "function",
                    function: Function {
                        name: "bash",
                        arguments: &arguments,
                    },
                }]),
                ..Delta::default()
            };
            frames.push((Duration::ZERO, event(&chunk(&id, delta, None))?));
            "tool_calls"
        }
    };
    let last = chunk(&id, Delta::default(), Some(finish));
    frames.push((Duration::ZERO, event(&last)?));
    frames.push((Duration::ZERO, Bytes::from_static(b"data: [DONE]\n\n")));
    Ok(frames)
}

fn chunk<'a>(id: &'a str, delta: Delta<'a>, finish_reason: Option<&'static str>) -> Chunk<'a> {
    Chunk {
        id,
        object: "chat.completion.chunk",
        created: 1,
        model: "fake",
        choices: [Choice {
            index: 0,
            delta,
            finish_reason,
        }],
    }
}

fn event(chunk: &Chunk<'_>) -> serde_json::Result<Bytes> {
    let mut line = b"data: ".to_vec();
    serde_json::to_writer(&mut line, chunk)?;
    line.extend_from_slice(b"\n\n");
    Ok(Bytes::from(line))
}

/// `text` in word-sized pieces that concatenate back to it: each piece but
/// the first starts with the space before its word.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let leading = rest.len() - rest.trim_start().len();
        let end = rest[leading..]
            .find(char::is_whitespace)
            .map_or(rest.len(), |at| leading + at);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::words;

    #[test]
    fn words_concatenate_back_to_the_text() {
        for text in ["one two  three", " lead", "trail ", "a\nb", "", "x"] {
            let pieces: Vec<&str> = words(text).collect();
            assert_eq!(pieces.concat(), text);
            assert!(pieces.iter().all(|p| !p.is_empty()));
        }
        assert_eq!(words("one two").collect::<Vec<_>>(), ["one", " two"]);
    }
}
