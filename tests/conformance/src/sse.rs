//! A Server-Sent Events reader that never hangs a case.
//!
//! A thread reads the stream and parses it into [`Frame`]s, which the case
//! takes from a channel with a timeout. When the case drops the [`Stream`],
//! the thread ends at the next frame (a keep-alive comes at least every 15 s)
//! and its connection closes.

use std::io::{BufRead, BufReader};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use crate::{Reply, Value, admin_token, target};

/// One unit of the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// An event: its `id:` field (if any) and its `data:` lines joined by `\n`.
    Event {
        /// The `event:` field; stasis never sends one, so `onmessage` sees every event.
        name: Option<String>,
        /// The `id:` field.
        id: Option<String>,
        /// The `data:` lines joined by `\n`.
        data: String,
    },
    /// A comment line, without its leading `:`.
    Comment(String),
}

/// An open event stream.
#[derive(Debug)]
pub struct Stream {
    /// The response headers (names in lower case).
    pub headers: Vec<(String, String)>,
    frames: Receiver<Frame>,
}

fn client() -> &'static ureq::Agent {
    static CLIENT: OnceLock<ureq::Agent> = OnceLock::new();
    CLIENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(Duration::from_secs(30)))
            .build()
            .into()
    })
}

/// Opens `GET path` with `Accept: text/event-stream`, an admin token and
/// `headers`. A 200 gives the stream; anything else comes back whole as `Err`.
///
/// # Panics
/// When the server cannot be reached.
pub fn open(path: &str, headers: &[(&str, &str)]) -> Result<Stream, Reply> {
    let url = format!("{}{path}", target().base);
    let mut request = client()
        .get(&url)
        .header("Accept", "text/event-stream")
        .header("Authorization", format!("Bearer {}", admin_token()));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request
        .call()
        .unwrap_or_else(|e| panic!("GET {url} (event stream) failed: {e}"));
    if response.status().as_u16() != 200 {
        let mut response = response;
        let status = response.status().as_u16();
        let headers = lower_headers(response.headers());
        let body = response.body_mut().read_to_vec().unwrap_or_default();
        let reply = Reply {
            status,
            headers,
            body,
        };
        crate::openapi::check("GET", path, &reply);
        return Err(reply);
    }
    let headers = lower_headers(response.headers());
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    crate::openapi::check_stream(path, 200, content_type);
    let (sender, frames) = channel();
    let reader = BufReader::new(response.into_body().into_reader());
    std::thread::spawn(move || pump(reader, &sender));
    Ok(Stream { headers, frames })
}

fn lower_headers(headers: &ureq::http::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

/// Parses the stream into frames until it ends or the case stops listening.
fn pump(mut reader: impl BufRead, frames: &Sender<Frame>) {
    let mut id = None;
    let mut name = None;
    let mut data: Option<String> = None;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = line.trim_end_matches(['\n', '\r']);
        let frame = if text.is_empty() {
            let (data, id, name) = (data.take(), id.take(), name.take());
            data.map(|data| Frame::Event { name, id, data })
        } else if let Some(comment) = text.strip_prefix(':') {
            Some(Frame::Comment(comment.to_owned()))
        } else {
            let (field, value) = text.split_once(':').unwrap_or((text, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => id = Some(value.to_owned()),
                "event" => name = Some(value.to_owned()),
                "data" => match &mut data {
                    Some(buffer) => {
                        buffer.push('\n');
                        buffer.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                _ => {}
            }
            None
        };
        if let Some(frame) = frame
            && frames.send(frame).is_err()
        {
            return;
        }
    }
}

impl Stream {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next frame, or `None` when `timeout` passes first.
    ///
    /// # Panics
    /// When the stream ends: a live stream stays open.
    pub fn next_frame(&self, timeout: Duration) -> Option<Frame> {
        match self.frames.recv_timeout(timeout) {
            Ok(frame) => Some(frame),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the event stream ended"),
        }
    }

    /// The next event as `(seq, event JSON)`, skipping comments, or `None`
    /// when `timeout` passes first.
    ///
    /// # Panics
    /// When the event's `id` is not an integer or its `data` not JSON.
    pub fn next_event(&self, timeout: Duration) -> Option<(u64, Value)> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_frame(left)? {
                Frame::Comment(_) => continue,
                Frame::Event { name, id, data } => {
                    assert_eq!(name, None, "events carry no `event:` field: {data}");
                    let id = id.unwrap_or_else(|| panic!("an event carries an id: {data}"));
                    let seq = id
                        .parse()
                        .unwrap_or_else(|_| panic!("an event id is its seq, got {id:?}"));
                    let event = serde_json::from_str(&data)
                        .unwrap_or_else(|e| panic!("event data is JSON ({e}): {data:?}"));
                    return Some((seq, event));
                }
            }
        }
    }

    /// The next `n` events, each within `timeout` of the previous one.
    ///
    /// # Panics
    /// When one does not come in time.
    pub fn take_events(&self, n: usize, timeout: Duration) -> Vec<(u64, Value)> {
        (0..n)
            .map(|i| {
                self.next_event(timeout).unwrap_or_else(|| {
                    panic!("event {} of {n} did not arrive within {timeout:?}", i + 1)
                })
            })
            .collect()
    }

    /// Asserts no event arrives within `wait`.
    pub fn assert_no_event(&self, wait: Duration) {
        if let Some((seq, event)) = self.next_event(wait) {
            panic!("expected no event, got seq {seq}: {event}");
        }
    }
}
