//! The reader thread: follows the runtime's `GET /event`, classifies each event and queues
//! the ones to forward. A stream that ends, breaks or stays silent for the idle timeout (kilo
//! sends `server.heartbeat` about every 10 s) is reopened with a bounded backoff, and every
//! (re)connection queues a resync marker for what the runtime will not replay.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::control::Control;
use super::event::{EventFilter, Verdict};
use super::queue::{Pushed, Queue, Resync, ResyncReason, StreamOpened};
use super::runtime::Runtime;
use super::stats::{Stats, add};
use super::{Log, now_ms};
use crate::retry::{self, RetryPolicy};
use crate::sse::SseParser;

/// Event ids remembered for deduplication.
const DEDUPE_WINDOW: usize = 10_000;
/// A longer stream line is skipped (kilo's events stay far below; stasis takes 1 MiB).
const MAX_LINE_BYTES: u64 = 64 * 1024 * 1024;
/// A stream that lived this long was healthy: the backoff starts over after it.
const HEALTHY_STREAM: Duration = Duration::from_secs(5);

/// Everything the reader thread needs.
pub(crate) struct Reader {
    pub(crate) runtime: Runtime,
    pub(crate) queue: Arc<Queue>,
    pub(crate) control: Arc<Control>,
    pub(crate) stats: Arc<Stats>,
    pub(crate) log: Log,
    pub(crate) idle_timeout: Duration,
    /// The resync of the first connection (start or restart).
    pub(crate) first: Resync,
}

/// How one connection ended.
struct Lost {
    /// When its last byte came (ms since the epoch).
    last_ms: u64,
    why: String,
}

impl Reader {
    /// Follows the stream until the sidecar stops.
    pub(crate) fn run(self) {
        let policy = RetryPolicy {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            ..RetryPolicy::default()
        };
        let mut filter = EventFilter::new(DEDUPE_WINDOW);
        let mut resync = self.first.clone();
        let mut failures = 0u32;
        // Failed attempts to open since the last open stream: the first and every tenth are logged.
        let mut failed_opens = 0u32;
        let mut connected_once = false;
        while !self.control.is_stopping() {
            let requested_ms = now_ms();
            let delay = match self.runtime.open_events(self.idle_timeout) {
                Ok(body) => {
                    failed_opens = 0;
                    let opened = Instant::now();
                    self.announce(connected_once, &resync);
                    connected_once = true;
                    resync.opened = Some(StreamOpened {
                        requested_ms,
                        answered_ms: now_ms(),
                    });
                    self.queue.push_resync(resync.clone());
                    self.control.set_following();
                    let lost = self.read(body, &mut filter);
                    if self.control.is_stopping() {
                        return;
                    }
                    add(&self.stats.reconnects, 1);
                    resync = Resync {
                        reason: ResyncReason::Reconnect,
                        since_ms: lost.last_ms,
                        gap: None,
                        opened: None,
                    };
                    if opened.elapsed() >= HEALTHY_STREAM {
                        failures = 0;
                    }
                    let delay = policy.delay(failures, None, retry::jitter());
                    (self.log)(&format!(
                        "lost the runtime's event stream ({}); reconnecting in {delay:.1?}",
                        lost.why
                    ));
                    delay
                }
                Err(e) => {
                    let delay = policy.delay(failures, None, retry::jitter());
                    if failed_opens.is_multiple_of(10) {
                        (self.log)(&format!(
                            "cannot open the runtime's event stream ({e}); retrying in {delay:.1?}"
                        ));
                    }
                    failed_opens = failed_opens.saturating_add(1);
                    delay
                }
            };
            failures = failures.saturating_add(1);
            std::thread::sleep(delay);
        }
    }

    fn announce(&self, again: bool, resync: &Resync) {
        let verb = if again {
            "reconnected to"
        } else {
            "connected to"
        };
        (self.log)(&format!(
            "{verb} {}/event (resync: {} since {} ms)",
            self.runtime.base(),
            resync.reason,
            resync.since_ms
        ));
    }

    /// Reads one connection until it ends; queues what it carries.
    fn read(&self, body: impl Read, filter: &mut EventFilter) -> Lost {
        let mut reader = BufReader::with_capacity(64 * 1024, body);
        let mut parser = SseParser::new();
        let mut line = Vec::new();
        let mut last_ms = now_ms();
        loop {
            line.clear();
            let read = (&mut reader)
                .take(MAX_LINE_BYTES)
                .read_until(b'\n', &mut line);
            let why = match read {
                Ok(0) => Some("the runtime closed it".to_owned()),
                Ok(_) => None,
                Err(e) if is_timeout(&e) => Some(format!("silent for {:?}", self.idle_timeout)),
                Err(e) => Some(e.to_string()),
            };
            if let Some(why) = why {
                return Lost { last_ms, why };
            }
            last_ms = now_ms();
            if self.control.is_stopping() {
                return Lost {
                    last_ms,
                    why: "stopping".into(),
                };
            }
            if !line.ends_with(b"\n") && line.len() as u64 == MAX_LINE_BYTES {
                self.malformed("a stream line over 64 MiB");
                skip_rest_of_line(&mut reader);
                continue;
            }
            let Ok(text) = std::str::from_utf8(&line) else {
                self.malformed("a stream line that is not UTF-8");
                continue;
            };
            if let Some(event) = parser.feed(text.trim_end_matches(['\n', '\r'])) {
                self.handle(filter.classify(&event.data, last_ms));
            }
        }
    }

    fn handle(&self, verdict: Verdict) {
        match verdict {
            Verdict::Forward { event, shrunk } => {
                if shrunk {
                    add(&self.stats.shrunk, 1);
                }
                if let Pushed::Dropped { first } = self.queue.push_event(event) {
                    add(&self.stats.dropped, 1);
                    if first {
                        (self.log)(
                            "the buffer is full: dropping events until stasis has stored enough \
                             (a gap event and a resync will follow)",
                        );
                    }
                }
            }
            Verdict::Malformed(reason) => self.malformed(&reason),
            Verdict::Twin | Verdict::Keepalive | Verdict::Duplicate => {}
        }
    }

    fn malformed(&self, reason: &str) {
        let before = self
            .stats
            .malformed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if before.is_multiple_of(100) {
            (self.log)(&format!(
                "skipped a stream event: {reason} ({} so far)",
                before + 1
            ));
        }
    }
}

/// A read that ended on the idle timeout (ureq reports its own timeout inside the I/O error).
fn is_timeout(error: &std::io::Error) -> bool {
    error.kind() == ErrorKind::TimedOut
        || error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|inner| matches!(inner, ureq::Error::Timeout(_)))
}

fn skip_rest_of_line(reader: &mut impl BufRead) {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        match reader.take(MAX_LINE_BYTES).read_until(b'\n', &mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) if sink.ends_with(b"\n") => return,
            Ok(_) => {}
        }
    }
}
