//! kilo's own view of a session: `GET /session` and
//! `GET /session/{id}/message`, read into what tests compare.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One session of `GET /session`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SessionInfo {
    /// `ses_…`.
    pub id: String,
    /// The title kilo gave it.
    #[serde(default)]
    pub title: String,
}

/// One message with its parts.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct KiloMessage {
    /// Who wrote it and how it ended.
    pub info: MessageInfo,
    /// Its parts in kilo's order.
    #[serde(default)]
    pub parts: Vec<Part>,
}

/// A message's `info`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct MessageInfo {
    /// `msg_…`.
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// `created`, and `completed` once an assistant message is.
    #[serde(default)]
    pub time: Value,
    /// Why an assistant message stopped (`stop`, `tool-calls`).
    #[serde(default)]
    pub finish: Option<String>,
    /// What went wrong, if anything did.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One part of a message.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Part {
    /// `prt_…`.
    pub id: String,
    /// `text`, `tool`, `reasoning`, `step-start`, `step-finish`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// A text part's text.
    #[serde(default)]
    pub text: Option<String>,
    /// kilo added the text itself.
    #[serde(default)]
    pub synthetic: Option<bool>,
    /// The text is not sent to the model.
    #[serde(default)]
    pub ignored: Option<bool>,
    /// A tool part's tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// A tool part's state (`status`, `input`, `output`, `title`, ...).
    #[serde(default)]
    pub state: Option<Value>,
}

impl KiloMessage {
    /// The text of its text parts that are what was said (not synthetic or
    /// ignored), joined with `"\n"`.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|part| part.kind == "text")
            .filter(|part| part.synthetic != Some(true) && part.ignored != Some(true))
            .filter_map(|part| part.text.as_deref())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Its tool parts.
    pub fn tools(&self) -> impl Iterator<Item = &Part> {
        self.parts.iter().filter(|part| part.kind == "tool")
    }
}
