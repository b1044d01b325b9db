//! A request the fake model got, as kilo sent it.

use serde_json::Value;

/// One `POST /v1/chat/completions`.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The JSON body as sent (`Value::Null` when it was not JSON).
    pub body: Value,
    /// Its `messages`, each reduced to role and text.
    pub messages: Vec<ChatMessage>,
}

/// One message of a request: its role and its text parts joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The content's text (a string, or the `text` of each part, joined).
    pub text: String,
}

impl ModelRequest {
    /// Reads `body`; anything that is not a chat request has no messages.
    pub fn parse(body: &[u8]) -> Self {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|messages| messages.iter().map(ChatMessage::from_json).collect())
            .unwrap_or_default();
        Self { body, messages }
    }

    /// The request asks for a stream (`"stream": true`).
    pub fn streams(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// Some message's text contains `text`.
    pub fn mentions(&self, text: &str) -> bool {
        self.messages.iter().any(|m| m.text.contains(text))
    }

    /// The request is kilo's title generator at work (its system prompt
    /// says so).
    pub fn is_title_request(&self) -> bool {
        self.messages
            .iter()
            .any(|m| m.role == "system" && m.text.contains("title generator"))
    }

    /// The last message is a tool's result.
    pub fn last_is_tool_result(&self) -> bool {
        self.messages.last().is_some_and(|m| m.role == "tool")
    }

    /// The text of the last `user` message.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .map(|m| m.text.as_str())
    }

    /// The request carries tool schemas (title requests do not).
    pub fn tool_count(&self) -> usize {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }
}

impl ChatMessage {
    fn from_json(message: &Value) -> Self {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        let text = match message.get("content") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect(),
            _ => String::new(),
        };
        Self {
            role: role.to_owned(),
            text,
        }
    }
}
