//! Answers to a request that does not stream (`"stream": false` or none, as
//! a summariser asks): one `chat.completion` object, or an error.

use super::script::Reply;
use serde::Serialize;

#[derive(Serialize)]
struct Completion<'a> {
    id: String,
    object: &'static str,
    model: &'static str,
    choices: [Choice<'a>; 1],
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: Message<'a>,
    finish_reason: &'static str,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorMessage<'a>,
}

#[derive(Serialize)]
struct ErrorMessage<'a> {
    message: &'a str,
}

/// The status and JSON body answering `reply` to the `number`-th request.
pub(crate) fn answer(reply: &Reply, number: usize) -> (u16, Vec<u8>) {
    let body = match reply {
        Reply::Text { text, .. } => serde_json::to_vec(&Completion {
            id: format!("chatcmpl-{number}"),
            object: "chat.completion",
            model: super::MODEL_ID,
            choices: [Choice {
                index: 0,
                message: Message {
                    role: "assistant",
                    content: text,
                },
                finish_reason: "stop",
            }],
        }),
        Reply::Failure { status } => {
            return (*status, error("the fake model was told to fail"));
        }
        Reply::Bash { .. } => return (501, error("tool calls are only streamed")),
    };
    (200, body.unwrap_or_default())
}

/// An OpenAI-style error body.
pub(crate) fn error(message: &str) -> Vec<u8> {
    serde_json::to_vec(&ErrorBody {
        error: ErrorMessage { message },
    })
    .unwrap_or_default()
}
