//! What the fake model answers: a script of replies picked by the last user
//! message.

use super::request::ModelRequest;
use std::time::Duration;

/// One reply of the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Text streamed word by word, `chunk_delay` (else the script's) apart.
    Text {
        /// The whole reply.
        text: String,
        /// The pause before each word's chunk.
        chunk_delay: Option<Duration>,
    },
    /// An error answer with this HTTP status (streamed or not).
    Failure {
        /// The status, e.g. 500.
        status: u16,
    },
    /// One `bash` tool call, sent as a single `tool_calls` chunk.
    Bash {
        /// The command kilo runs.
        command: String,
        /// The call's `description`, which kilo shows as its title.
        description: String,
    },
}

impl Reply {
    /// A text reply at the script's pace.
    pub fn text(text: &str) -> Self {
        Self::Text {
            text: text.to_owned(),
            chunk_delay: None,
        }
    }

    /// A text reply at its own pace: slow ones leave time to kill kilo
    /// mid-reply.
    pub fn paced_text(text: &str, chunk_delay: Duration) -> Self {
        Self::Text {
            text: text.to_owned(),
            chunk_delay: Some(chunk_delay),
        }
    }

    /// An error answer with `status`.
    pub fn failure(status: u16) -> Self {
        Self::Failure { status }
    }

    /// A `bash` tool call.
    pub fn bash(command: &str, description: &str) -> Self {
        Self::Bash {
            command: command.to_owned(),
            description: description.to_owned(),
        }
    }
}

/// The replies, by the text of the last user message.
///
/// A request whose system prompt is kilo's title generator gets the title;
/// one whose last message is a tool's result gets the `after_tool` reply (so
/// a tool call is not asked for again); otherwise the first rule whose
/// pattern the last user message contains, else the fallback.
#[derive(Debug, Clone)]
pub struct Script {
    rules: Vec<(String, Reply)>,
    after_tool: Reply,
    fallback: Reply,
    title: String,
    chunk_delay: Duration,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            rules: Vec::new(),
            after_tool: Reply::text("The command ran."),
            fallback: Reply::text("OK."),
            title: "A short title".to_owned(),
            chunk_delay: Duration::from_millis(10),
        }
    }
}

impl Script {
    /// A script with only the defaults: `OK.` to anything, `The command
    /// ran.` after a tool, the title `A short title`, 10 ms between chunks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `reply` when the last user message contains `pattern`.
    #[must_use]
    pub fn when(mut self, pattern: &str, reply: Reply) -> Self {
        self.rules.push((pattern.to_owned(), reply));
        self
    }

    /// The reply once a tool's result comes back.
    #[must_use]
    pub fn after_tool(mut self, reply: Reply) -> Self {
        self.after_tool = reply;
        self
    }

    /// The reply when no rule matches.
    #[must_use]
    pub fn otherwise(mut self, reply: Reply) -> Self {
        self.fallback = reply;
        self
    }

    /// The title kilo's title generator gets.
    #[must_use]
    pub fn title(mut self, title: &str) -> Self {
        self.title = title.to_owned();
        self
    }

    /// The pause before each chunk of a text reply without its own pace.
    #[must_use]
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// The reply to `request`, with its pace settled.
    pub(crate) fn reply_to(&self, request: &ModelRequest) -> Reply {
        let reply = if request.is_title_request() {
            Reply::text(&self.title)
        } else if request.last_is_tool_result() {
            self.after_tool.clone()
        } else {
            let last = request.last_user_text().unwrap_or_default();
            self.rules
                .iter()
                .find(|(pattern, _)| last.contains(pattern.as_str()))
                .map_or_else(|| self.fallback.clone(), |(_, reply)| reply.clone())
        };
        match reply {
            Reply::Text { text, chunk_delay } => Reply::Text {
                text,
                chunk_delay: Some(chunk_delay.unwrap_or(self.chunk_delay)),
            },
            other => other,
        }
    }
}
