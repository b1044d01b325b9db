//! Live delivery: with a Server-Sent Events stream open on a log, append
//! one item at a time and time each from sending the append to receiving
//! its frame.

use super::Bounds;
use crate::{
    client::{Conn, Endpoint},
    logs::{Log, payload},
    stats::Latency,
};
use anyhow::{Context, Result, bail};
use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use std::{
    sync::Arc,
    time::{Duration, Instant},
};
use tokio::sync::mpsc;

/// Deliveries not counted before the measured ones.
pub const WARM_UP: u64 = 5;
/// How long a frame may take before the run fails.
const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// Append-to-delivery latency on `log`, which must be empty (stasis) or is
/// subscribed from its tail (peer).
pub async fn delivery(
    endpoint: &Arc<Endpoint>,
    log: &Log,
    data_size: usize,
    bounds: Bounds,
) -> Result<Latency> {
    let mut appender = Conn::open(endpoint).await?;
    log.create(&mut appender).await?;
    let mut subscriber = Conn::open(endpoint).await?;
    let response = subscriber.send(&log.subscribe(0)).await?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        bail!(
            "opening the event stream answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let (frames, mut delivered) = mpsc::unbounded_channel();
    let reader = tokio::spawn(read_frames(response.into_body(), frames));

    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    let mut i = 0u64;
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let call = log.append(&[payload(i, data_size)]);
        let sent = Instant::now();
        appender.expect_ok(&call).await?;
        let arrived = loop {
            let (got, at) = tokio::time::timeout(FRAME_TIMEOUT, delivered.recv())
                .await
                .with_context(|| format!("item {i} was not delivered within {FRAME_TIMEOUT:?}"))?
                .context("the event stream ended")?;
            if got == i {
                break at;
            }
            if got > i {
                bail!("the event stream skipped item {i} (got {got})");
            }
        };
        if i >= WARM_UP {
            samples.push(arrived.saturating_duration_since(sent));
        }
        i += 1;
    }
    reader.abort();
    Latency::of(samples).context("no delivery was measured")
}

/// Reads SSE frames and reports each data frame's item number with the time
/// its bytes arrived.
async fn read_frames(
    mut body: Incoming,
    frames: mpsc::UnboundedSender<(u64, Instant)>,
) -> Result<()> {
    let mut buffer = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let arrived = Instant::now();
        let Ok(chunk) = frame?.into_data() else {
            continue;
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = find(&buffer, b"\n\n") {
            let frame = buffer.split_to(end);
            buffer.advance(2);
            if let Some(item) = item_of(&frame) {
                frames.send((item, arrived))?;
            }
        }
    }
    Ok(())
}

/// The `i` a data frame carries; `None` for comments, control events and
/// frames without one.
fn item_of(frame: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(frame).ok()?;
    let mut data = String::new();
    for line in text.lines() {
        if let Some(event) = line.strip_prefix("event:") {
            if event.trim() != "data" {
                return None;
            }
        } else if let Some(value) = line.strip_prefix("data:") {
            data.push_str(value.strip_prefix(' ').unwrap_or(value));
        }
    }
    let at = data.find("\"i\":")? + 4;
    let digits: String = data[at..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stasis_frame_yields_its_item() {
        let frame =
            b"id: 7\ndata: {\"seq\":7,\"type\":\"bench\",\"data\":{\"i\":42,\"text\":\"x\"}}";
        assert_eq!(item_of(frame), Some(42));
    }

    #[test]
    fn peer_data_frames_count_and_control_frames_do_not() {
        assert_eq!(
            item_of(b"event: data\ndata:[{\"i\":3,\"text\":\"x\"}]"),
            Some(3)
        );
        assert_eq!(
            item_of(b"event: control\ndata:{\"streamNextOffset\":\"1\"}"),
            None
        );
        assert_eq!(item_of(b": keep-alive"), None);
    }
}
