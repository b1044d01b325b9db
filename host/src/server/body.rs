//! Request bodies: read whole up to the endpoint's limit (or chunk by chunk,
//! for an import), and cut when they arrive slower than a minimum rate;
//! refused bodies read a little and thrown away.

use crate::config::ServerLimits;
use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use stasis_api::ApiError;
use std::time::Duration;
use tokio::{sync::watch, time::Instant};

/// Why a body could not be read.
pub enum BodyError {
    /// It passed the endpoint's limit.
    TooLarge,
    /// Fewer bytes than the minimum rate asks came within one window.
    TooSlow,
    /// The connection failed.
    Read(hyper::Error),
    /// The shutdown grace ended while the body was still arriving.
    ShuttingDown,
}

/// The 503 for a body still arriving when the shutdown grace ends: the
/// request changed nothing and may be sent again, to this server once it
/// is back or to another one.
pub fn shutting_down() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "shutting_down",
        "the server is shutting down and its grace period ended before the request body arrived; \
         nothing was changed, send it again",
    )
    .with("retry_after", 1)
    .with_header(header::RETRY_AFTER, "1")
    .with_header(header::CONNECTION, "close")
}

/// The 408 for a body slower than `limits` allow; the connection closes
/// after it, since the rest of the body is still on its way.
pub fn too_slow(limits: &ServerLimits) -> ApiError {
    let window = humantime::format_duration(limits.body_window);
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "body_too_slow",
        format!(
            "the request body arrived slower than {} bytes/s over {window}",
            limits.body_min_rate
        ),
    )
    .with("min_rate", limits.body_min_rate)
    .with_header(header::CONNECTION, "close")
}

/// Reads the body into one buffer sized from `Content-Length` (already held
/// to the limit), so that a 25 MiB snapshot is received as one copy rather
/// than chunks gathered and then joined; past `limit` it stops at once.
/// Each window of `limits.body_window` must bring `body_min_rate` bytes a
/// second, so a stalled body is cut while a slow but live one goes on.
pub async fn read(
    body: Incoming,
    headers: &HeaderMap,
    limit: u64,
    limits: &ServerLimits,
    grace_over: watch::Receiver<bool>,
) -> Result<Bytes, BodyError> {
    let declared = declared_length(headers).unwrap_or(0).min(limit);
    let mut buffer = Vec::with_capacity(usize::try_from(declared).unwrap_or(0));
    let mut chunks = Chunks::new(body, limit, limits, grace_over);
    while let Some(data) = chunks.next().await? {
        buffer.extend_from_slice(&data);
    }
    Ok(Bytes::from(buffer))
}

/// A body read chunk by chunk, under the same limit and minimum rate as
/// [`read`], for a request that streams its body (an import).
pub struct Chunks {
    body: Incoming,
    pace: Pace,
    limit: u64,
    received: u64,
    /// Turns true when the shutdown grace ends.
    grace_over: watch::Receiver<bool>,
}

impl Chunks {
    /// Reads `body` up to `limit` bytes, until `grace_over` turns true.
    pub fn new(
        body: Incoming,
        limit: u64,
        limits: &ServerLimits,
        grace_over: watch::Receiver<bool>,
    ) -> Self {
        Self {
            body,
            pace: Pace::new(limits),
            limit,
            received: 0,
            grace_over,
        }
    }

    /// The next piece of data; `None` at the body's end.
    pub async fn next(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            let next = tokio::time::timeout_at(self.pace.window_end, self.body.frame());
            let frame = tokio::select! {
                next = next => next,
                _ = self.grace_over.wait_for(|over| *over) => return Err(BodyError::ShuttingDown),
            };
            let frame = match frame {
                Ok(Some(frame)) => frame.map_err(BodyError::Read)?,
                Ok(None) => return Ok(None),
                Err(_window_over) => {
                    self.pace.check(0)?;
                    continue;
                }
            };
            if let Ok(data) = frame.into_data() {
                let len = u64::try_from(data.len()).unwrap_or(u64::MAX);
                self.received = self.received.saturating_add(len);
                if self.received > self.limit {
                    return Err(BodyError::TooLarge);
                }
                self.pace.check(data.len())?;
                return Ok(Some(data));
            }
        }
    }

    /// Body bytes received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Reads and drops what a refusal left of the body (up to
    /// [`IMPORT_DISCARD`] bytes, within [`IMPORT_DISCARD_TIME`]), so that a
    /// client still sending its import reads the refusal rather than a
    /// broken pipe. Past that the connection closes under it.
    pub async fn discard_rest(&mut self) {
        if *self.grace_over.borrow() {
            return;
        }
        let _ = tokio::time::timeout(IMPORT_DISCARD_TIME, async {
            let mut seen: u64 = 0;
            while let Some(Ok(frame)) = self.body.frame().await {
                if let Some(data) = frame.data_ref() {
                    seen = seen.saturating_add(u64::try_from(data.len()).unwrap_or(u64::MAX));
                    if seen > IMPORT_DISCARD {
                        break;
                    }
                }
            }
        })
        .await;
    }
}

/// How much of an import's body its refusal may leave to be read and dropped.
const IMPORT_DISCARD: u64 = 64 * 1024 * 1024;
/// How long dropping it may take.
const IMPORT_DISCARD_TIME: Duration = Duration::from_secs(10);

/// The minimum rate, checked window by window.
struct Pace {
    window: Duration,
    needed: u64,
    window_end: Instant,
    received: u64,
}

impl Pace {
    fn new(limits: &ServerLimits) -> Self {
        let needed = (limits.body_min_rate as f64 * limits.body_window.as_secs_f64()).ceil();
        Self {
            window: limits.body_window,
            // A float to integer `as` saturates; the rate is a flag's value.
            needed: needed as u64,
            window_end: Instant::now() + limits.body_window,
            received: 0,
        }
    }

    /// Counts `bytes` just received; when the window is over, it must have
    /// brought enough, and the next one starts.
    fn check(&mut self, bytes: usize) -> Result<(), BodyError> {
        self.received = self
            .received
            .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
        let now = Instant::now();
        if now < self.window_end {
            return Ok(());
        }
        if self.received < self.needed {
            return Err(BodyError::TooSlow);
        }
        self.received = 0;
        self.window_end = now + self.window;
        Ok(())
    }
}

/// How much of a refused request's body is read (and thrown away) before
/// answering, past the limit for a 413: a client that sends its whole body
/// before reading the answer then sees the refusal, not a broken pipe, and
/// the connection stays usable. Larger bodies are refused at once.
const DISCARD_SLACK: u64 = 1024 * 1024;
/// How long reading a refused body may take.
const DISCARD_TIME: Duration = Duration::from_secs(2);

/// Reads and drops what is left of a refused request's body, within bounds.
pub async fn discard_refused(headers: &HeaderMap, refusal: &ApiError, mut body: Incoming) {
    let limit = refusal
        .extra
        .get("limit")
        .and_then(serde_json::Value::as_u64);
    let allowance = match limit {
        Some(limit) if refusal.status == StatusCode::PAYLOAD_TOO_LARGE => {
            limit.saturating_add(DISCARD_SLACK)
        }
        _ => DISCARD_SLACK,
    };
    if declared_length(headers).is_some_and(|declared| declared > allowance) {
        return;
    }
    let _ = tokio::time::timeout(DISCARD_TIME, async {
        let mut seen: u64 = 0;
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                seen = seen.saturating_add(u64::try_from(data.len()).unwrap_or(u64::MAX));
                if seen > allowance {
                    break;
                }
            }
        }
    })
    .await;
}

fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}
