//! kilo's own view of the conversation (`GET /session/{id}/message`), and
//! what the rebuilt turns must show of it.

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
pub(crate) struct KiloMessage {
    pub(crate) info: Info,
    #[serde(default)]
    pub(crate) parts: Vec<Part>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Info {
    pub(crate) id: String,
    pub(crate) role: String,
    #[serde(default)]
    time: Value,
    #[serde(default)]
    finish: Option<String>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    synthetic: Option<bool>,
    #[serde(default)]
    ignored: Option<bool>,
}

impl KiloMessage {
    /// kilo finished writing it (a user's message is whole at once).
    pub(crate) fn is_finished(&self) -> bool {
        self.info.role == "user"
            || self
                .info
                .time
                .get("completed")
                .is_some_and(|c| !c.is_null())
            || self.info.finish.is_some()
            || self.info.error.is_some()
    }

    /// The text of what was said, parts joined with `"\n"`.
    pub(crate) fn text(&self) -> String {
        self.parts
            .iter()
            .filter(|part| part.kind == "text")
            .filter(|part| part.synthetic != Some(true) && part.ignored != Some(true))
            .filter_map(|part| part.text.as_deref())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(crate) fn tool_count(&self) -> usize {
        self.parts.iter().filter(|part| part.kind == "tool").count()
    }

    /// A turn must stand for it: it says something, or was cut off.
    pub(crate) fn has_a_turn(&self) -> bool {
        !self.text().is_empty() || self.tool_count() > 0 || !self.is_finished()
    }
}

/// A turn's content split into its text and its tool lines.
pub(crate) fn split_tool_lines(content: &str) -> (String, Vec<&str>) {
    let (tools, text): (Vec<&str>, Vec<&str>) = content
        .split('\n')
        .partition(|line| line.starts_with("[tool "));
    (text.join("\n"), tools)
}
