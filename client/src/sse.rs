//! A Server-Sent Events parser, line by line, after the WHATWG event-stream rules that matter
//! here: `data:` lines join with newlines, `id:` sets the last event id (kept across events),
//! a line starting with `:` is a comment (a keep-alive), a blank line ends an event.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The last event id in force (stasis sends the event's seq).
    pub id: Option<String>,
    /// The `event:` type, when given (stasis sends none).
    pub event: Option<String>,
    /// The data lines, joined with `\n`.
    pub data: String,
}

/// Accumulates lines into events.
#[derive(Debug, Default)]
pub struct SseParser {
    data: Option<String>,
    event: Option<String>,
    last_id: Option<String>,
}

impl SseParser {
    /// A parser with no last event id.
    pub fn new() -> Self {
        SseParser::default()
    }

    /// Feeds one line (without its line ending); answers an event when the line ends one.
    pub fn feed(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = self.event.take();
            return self.data.take().map(|data| SseEvent {
                id: self.last_id.clone(),
                event,
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "event" => self.event = Some(value.to_owned()),
            // `retry:` and unknown fields are ignored; the client has its own backoff.
            _ => {}
        }
        None
    }

    /// The last event id seen (what `Last-Event-ID` should carry on a reconnect).
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(parser: &mut SseParser, lines: &[&str]) -> Vec<SseEvent> {
        lines.iter().filter_map(|line| parser.feed(line)).collect()
    }

    #[test]
    fn events_carry_their_id_and_joined_data() {
        let mut parser = SseParser::new();
        let events = feed_all(
            &mut parser,
            &[
                "id: 7",
                "data: {\"a\":",
                "data:1}",
                "",
                ": keep-alive",
                "",
                "id: 8",
                "data: x",
                "",
            ],
        );
        assert_eq!(
            events,
            [
                SseEvent {
                    id: Some("7".into()),
                    event: None,
                    data: "{\"a\":\n1}".into()
                },
                SseEvent {
                    id: Some("8".into()),
                    event: None,
                    data: "x".into()
                },
            ]
        );
        assert_eq!(parser.last_id(), Some("8"));
    }

    #[test]
    fn comments_and_blank_lines_alone_make_no_event() {
        let mut parser = SseParser::new();
        assert!(feed_all(&mut parser, &[": keep-alive", "", "", "retry: 10", ""]).is_empty());
    }

    #[test]
    fn an_id_outlives_its_event() {
        let mut parser = SseParser::new();
        let events = feed_all(&mut parser, &["id: 3", "data: a", "", "data: b", ""]);
        assert_eq!(events[1].id.as_deref(), Some("3"));
    }
}
