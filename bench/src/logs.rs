//! The two kinds of append-only log the workloads drive, and how each is
//! spoken to: a stasis agent's event log and a Durable Streams stream.

use crate::client::{Call, Conn};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use hyper::Method;

/// The event type every benchmark event carries.
const EVENT_TYPE: &str = "bench";

/// One log on one server.
#[derive(Debug, Clone)]
pub enum Log {
    /// `/api/towns/{t}/rigs/{r}/agents/{a}/events` on stasis.
    Stasis {
        /// The agent's `/events` path.
        events_path: String,
    },
    /// `/v1/stream/{name}` on the Durable Streams peer.
    Peer {
        /// The stream's path.
        stream_path: String,
    },
}

impl Log {
    /// The event log of agent `agent` in rig `r` of `town`.
    pub fn stasis(town: &str, agent: &str) -> Self {
        Log::Stasis {
            events_path: format!("/api/towns/{town}/rigs/r/agents/{agent}/events"),
        }
    }

    /// The peer's stream `name`.
    pub fn peer(name: &str) -> Self {
        Log::Peer {
            stream_path: format!("/v1/stream/{name}"),
        }
    }

    /// Makes the log exist: the peer needs its stream created, stasis
    /// creates an agent's log on its first write.
    pub async fn create(&self, conn: &mut Conn) -> Result<()> {
        match self {
            Log::Stasis { .. } => Ok(()),
            Log::Peer { stream_path } => {
                let call = Call::json(Method::PUT, stream_path.clone(), Bytes::new());
                conn.expect_ok(&call).await.map(drop)
            }
        }
    }

    /// The request appending `datas` (JSON texts), in order, as one batch.
    pub fn append(&self, datas: &[String]) -> Call {
        match self {
            Log::Stasis { events_path } => {
                let mut body = String::from("{\"events\":[");
                for (index, data) in datas.iter().enumerate() {
                    if index > 0 {
                        body.push(',');
                    }
                    body.push_str("{\"type\":\"");
                    body.push_str(EVENT_TYPE);
                    body.push_str("\",\"data\":");
                    body.push_str(data);
                    body.push('}');
                }
                body.push_str("]}");
                Call::json(Method::POST, events_path.clone(), body.into())
            }
            Log::Peer { stream_path } => {
                let body = format!("[{}]", datas.join(","));
                Call::json(Method::POST, stream_path.clone(), body.into())
            }
        }
    }

    /// The request reading the log from its start: up to `limit` events on
    /// stasis (10,000 at most, its page limit); everything on the peer,
    /// which has no page limit.
    pub fn read_from_start(&self, limit: usize) -> Call {
        self.read_after(0, limit)
    }

    /// The request reading the page after cursor `after` (stasis; the peer
    /// always reads everything).
    pub fn read_after(&self, after: u64, limit: usize) -> Call {
        match self {
            Log::Stasis { events_path } => {
                Call::get(format!("{events_path}?after={after}&limit={limit}"))
            }
            Log::Peer { stream_path } => Call::get(format!("{stream_path}?offset=-1")),
        }
    }

    /// The request opening a Server-Sent Events stream of what is appended
    /// from now on (the log is expected to be empty or fully read).
    pub fn subscribe(&self, after: u64) -> Call {
        let mut call = match self {
            Log::Stasis { events_path } => Call::get(format!("{events_path}?after={after}")),
            Log::Peer { stream_path } => Call::get(format!("{stream_path}?offset=now&live=sse")),
        };
        call.accept = Some("text/event-stream");
        call
    }

    /// What one page of a read holds, checked against the log's own shape
    /// (stasis: an `events` page with `has_more` and `next_after`; peer: an
    /// array, always the whole stream).
    pub fn page(&self, body: &[u8]) -> Result<Page> {
        let value: serde_json::Value =
            serde_json::from_slice(body).context("the read did not answer JSON")?;
        match self {
            Log::Stasis { .. } => {
                let events = value
                    .get("events")
                    .and_then(serde_json::Value::as_array)
                    .context("the read has no `events` array")?;
                let next = match value.get("has_more").and_then(serde_json::Value::as_bool) {
                    Some(false) => None,
                    Some(true) => Some(
                        value
                            .get("next_after")
                            .and_then(serde_json::Value::as_u64)
                            .context("a page with more to come has no `next_after`")?,
                    ),
                    None => bail!("the read has no `has_more`"),
                };
                Ok(Page {
                    items: events.len(),
                    next,
                })
            }
            Log::Peer { .. } => Ok(Page {
                items: value
                    .as_array()
                    .context("the peer's read is not a JSON array")?
                    .len(),
                next: None,
            }),
        }
    }
}

/// One page of a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Items on this page.
    pub items: usize,
    /// The cursor of the next page, when there is more to come.
    pub next: Option<u64>,
}

/// A JSON object of exactly `size` bytes (at least ~30) carrying `i`.
pub fn payload(i: u64, size: usize) -> String {
    const FILLER: &[u8] = b"the quick brown fox jumps over the lazy dog; ";
    let head = format!("{{\"i\":{i},\"text\":\"");
    let room = size.saturating_sub(head.len() + 2);
    let mut text = String::with_capacity(size);
    text.push_str(&head);
    text.extend(FILLER.iter().cycle().take(room).map(|&b| char::from(b)));
    text.push_str("\"}");
    text
}

/// `count` payloads of `size` bytes numbered from `first`.
pub fn payloads(first: u64, count: usize, size: usize) -> Vec<String> {
    (first..).take(count).map(|i| payload(i, size)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_requested_size_and_are_json() {
        for size in [100, 1000] {
            let text = payload(12345, size);
            assert_eq!(text.len(), size);
            let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            assert_eq!(parsed["i"], 12345);
        }
    }

    #[test]
    fn a_stasis_batch_wraps_each_payload_in_an_event() {
        let call = Log::stasis("t", "a").append(&payloads(0, 2, 40));
        let body: serde_json::Value = serde_json::from_slice(&call.body).unwrap_or_default();
        assert_eq!(body["events"][1]["type"], "bench");
        assert_eq!(body["events"][1]["data"]["i"], 1);
        assert_eq!(call.path, "/api/towns/t/rigs/r/agents/a/events");
    }

    #[test]
    fn a_stasis_page_says_where_the_next_one_starts() {
        let log = Log::stasis("t", "a");
        let more = br#"{"events":[{"seq":1},{"seq":2}],"next_after":2,"has_more":true}"#;
        let last = br#"{"events":[{"seq":3}],"next_after":3,"has_more":false}"#;
        let page = |body: &[u8]| log.page(body).ok();
        assert_eq!(
            page(more),
            Some(Page {
                items: 2,
                next: Some(2)
            })
        );
        assert_eq!(
            page(last),
            Some(Page {
                items: 1,
                next: None
            })
        );
        assert_eq!(
            log.read_after(2, 10).path,
            "/api/towns/t/rigs/r/agents/a/events?after=2&limit=10"
        );
    }

    #[test]
    fn a_peer_batch_is_a_json_array_of_the_payloads() {
        let call = Log::peer("s").append(&payloads(7, 3, 40));
        let body: serde_json::Value = serde_json::from_slice(&call.body).unwrap_or_default();
        assert_eq!(body[2]["i"], 9);
    }
}
