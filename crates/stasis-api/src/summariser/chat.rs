//! The OpenAI chat-completions exchange, typed: the request both runtimes
//! send and the answer they read, so neither restates the wire.

use super::SummariserSettings;
use serde::{Deserialize, Serialize};
use stasis_domain::conversation::SummaryPrompt;

/// The runtime's answer to one `POST`: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body, as received.
    pub body: Vec<u8>,
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: [ChatMessage<'a>; 2],
    stream: bool,
    temperature: f32,
    max_tokens: u64,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'a str,
    content: &'a str,
}

#[derive(Deserialize)]
struct ChatCompletion {
    #[serde(default)]
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<AnswerMessage>,
}

#[derive(Deserialize)]
struct AnswerMessage {
    content: Option<String>,
}

/// The JSON body of one non-streaming request for `prompt`, its answer
/// capped near `max_tokens` (with room for the model's own count).
pub fn request_body(
    settings: &SummariserSettings,
    prompt: &SummaryPrompt,
    max_tokens: u64,
) -> Vec<u8> {
    let request = ChatRequest {
        model: &settings.model,
        messages: [
            ChatMessage {
                role: "system",
                content: &prompt.system,
            },
            ChatMessage {
                role: "user",
                content: &prompt.user,
            },
        ],
        stream: false,
        temperature: 0.0,
        max_tokens: max_tokens.saturating_mul(2).saturating_add(256),
    };
    // Strings and numbers always serialise.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// The summary in `answer`, or why there is none.
pub fn read_answer(answer: &ChatAnswer) -> Result<String, String> {
    if !(200..300).contains(&answer.status) {
        return Err(format!(
            "the summariser answered {}: {}",
            answer.status,
            excerpt(&answer.body)
        ));
    }
    let completion: ChatCompletion = serde_json::from_slice(&answer.body)
        .map_err(|err| format!("the summariser's answer is not a chat completion: {err}"))?;
    let text = completion
        .choices
        .into_iter()
        .find_map(|choice| choice.message.and_then(|m| m.content))
        .unwrap_or_default();
    if text.trim().is_empty() {
        return Err("the summariser answered an empty summary".into());
    }
    Ok(text)
}

/// The start of a body, for an error's detail.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut cut: String = text.chars().take(200).collect();
    if text.chars().count() > 200 {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> ChatAnswer {
        ChatAnswer {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_summary_is_the_first_choice_with_text() {
        let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"It went well."},"finish_reason":"stop"}]}"#;
        assert_eq!(read_answer(&answer(200, body)), Ok("It went well.".into()));
    }

    #[test]
    fn errors_and_empty_answers_say_why() {
        let refused = read_answer(&answer(500, r#"{"error":"boom"}"#));
        assert_eq!(
            refused,
            Err(r#"the summariser answered 500: {"error":"boom"}"#.into())
        );
        assert!(read_answer(&answer(200, r#"{"choices":[]}"#)).is_err());
        assert!(read_answer(&answer(200, "<html>")).is_err());
    }
}
