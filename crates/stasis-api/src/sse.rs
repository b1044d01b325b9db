//! The live tail: Server-Sent Events over an agent's log.
//!
//! One loop for both runtimes: read a page, send it, and when caught up wait
//! on the runtime's wake-up signal. A comment line goes out whenever the
//! stream has been silent for [`KEEP_ALIVE`], so proxies keep it open and
//! clients can tell a quiet stream from a dead one.

use crate::{Objects, error::ApiError, events::write_event};
use bytes::Bytes;
use futures::Stream;
use stasis_domain::{
    event_log::{ReadPage, ReadQuery},
    ids::AgentKey,
    operation::agent as op,
};
use std::time::Duration;

/// The longest silence on a stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A stream to open: its agent, its cursor and filters, and the first page,
/// read before the response started so that errors such as an expired
/// cursor still get a JSON status.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Tail {
    /// The agent whose log is tailed.
    pub key: AgentKey,
    /// Cursor and filters; `after` moves as pages go out.
    pub query: ReadQuery,
    /// The page read before the response started.
    pub first_page: ReadPage,
}

enum Step {
    Send(ReadPage),
    Read,
    Wait { last_seq: u64 },
    Done,
}

/// The stream's body: SSE frames, comments and, on failure, one `error` event.
pub fn stream<O: Objects + 'static>(objects: O, tail: Tail) -> impl Stream<Item = Bytes> + 'static {
    let Tail {
        key,
        mut query,
        first_page,
    } = tail;
    let opening = Bytes::from(format!(": stasis event stream after={}\n\n", query.after));
    query.after = first_page.next_after;
    let state = Tailing {
        last_output: objects.now_ms(),
        objects,
        key,
        query,
        step: Step::Send(first_page),
    };
    let frames = futures::stream::unfold(state, Tailing::next_chunk);
    futures::StreamExt::chain(futures::stream::once(async move { opening }), frames)
}

/// A live tail between two chunks of its body.
struct Tailing<O> {
    objects: O,
    key: AgentKey,
    query: ReadQuery,
    step: Step,
    /// When the stream last sent something (ms).
    last_output: i64,
}

impl<O: Objects> Tailing<O> {
    /// The next chunk of the body, and the state after it; `None` ends it.
    async fn next_chunk(mut self) -> Option<(Bytes, Self)> {
        loop {
            match std::mem::replace(&mut self.step, Step::Done) {
                Step::Done => return None,
                Step::Send(page) => {
                    self.step = if page.has_more {
                        Step::Read
                    } else {
                        Step::Wait {
                            last_seq: page.last_seq,
                        }
                    };
                    if !page.events.is_empty() {
                        self.last_output = self.objects.now_ms();
                        return Some((frames_of(&page), self));
                    }
                }
                Step::Read => match self
                    .objects
                    .agent(&self.key, op::read_events(self.query.clone()))
                    .await
                {
                    Ok(page) => {
                        self.query.after = page.next_after;
                        self.step = Step::Send(page);
                    }
                    // The step stays `Done`: the error event is the last chunk.
                    Err(err) => return Some((error_frame(err.into()), self)),
                },
                Step::Wait { last_seq } => {
                    self.step = Step::Wait { last_seq };
                    if let Some(keep_alive) = self.wait(last_seq).await {
                        return Some((keep_alive, self));
                    }
                    self.step = Step::Read;
                }
            }
        }
    }

    /// Waits for events past `last_seq` until the stream would have been
    /// silent for [`KEEP_ALIVE`]; the keep-alive comment when that time came
    /// first.
    async fn wait(&mut self, last_seq: u64) -> Option<Bytes> {
        let silent = u64::try_from(self.objects.now_ms().saturating_sub(self.last_output));
        let idle = Duration::from_millis(silent.unwrap_or(0));
        let Some(remaining) = KEEP_ALIVE.checked_sub(idle).filter(|d| !d.is_zero()) else {
            self.last_output = self.objects.now_ms();
            return Some(Bytes::from_static(b": keep-alive\n\n"));
        };
        self.objects
            .wait_for_events(&self.key, last_seq, remaining)
            .await;
        None
    }
}

/// `id: <seq>` and `data: <event JSON>` for each event of the page.
fn frames_of(page: &ReadPage) -> Bytes {
    let mut out = String::with_capacity(page.events.iter().map(|e| e.data.len() + 128).sum());
    for event in &page.events {
        out.push_str("id: ");
        out.push_str(&event.seq.to_string());
        out.push_str("\ndata: ");
        // Data is stored verbatim, so it may hold line breaks (JSON
        // whitespace only: breaks inside strings are escaped). SSE lines
        // cannot, so drop CRs and continue LFs on a new `data:` line.
        let mut json = String::new();
        write_event(&mut json, event);
        out.push_str(&json.replace('\r', "").replace('\n', "\ndata: "));
        out.push_str("\n\n");
    }
    Bytes::from(out)
}

fn error_frame(err: ApiError) -> Bytes {
    let body = err.into_response().into_body();
    let text = String::from_utf8_lossy(&body).replace('\n', "\ndata: ");
    Bytes::from(format!("event: error\ndata: {text}\n\n"))
}
