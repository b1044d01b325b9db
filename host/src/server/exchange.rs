//! One request's accounting: its metrics when the response's head is
//! ready, and its log line (a [`RequestRecord`]) when the response's body
//! is done, so that a streamed answer (a live tail, an export) is logged
//! with every byte it sent and its whole duration; and the count of live
//! tails open ([`TailOpen`]).

use super::{Body, Cut};
use crate::metrics::{Metrics, RequestLabels, RouteLabels, kind};
use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use stasis_api::{ChunkCheck, ErrorLog, request_log::RequestRecord};
use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

/// Error codes of writes refused by fencing.
const FENCED: [&str; 2] = ["container_fenced", "container_not_current"];

/// A request being answered.
pub struct Exchange {
    record: RequestRecord,
    started: Instant,
    metrics: Arc<Metrics>,
}

impl Exchange {
    /// Starts the clock on a request.
    pub fn start(metrics: &Arc<Metrics>, id: &str, method: &Method, path: &str) -> Self {
        Self {
            record: RequestRecord::start(id, method, path),
            started: Instant::now(),
            metrics: Arc::clone(metrics),
        }
    }

    /// Counts the response's head and wraps its body, which logs the
    /// request when it is done.
    pub fn respond(mut self, response: Response<Body>, bytes_in: u64) -> Response<Body> {
        let status = response.status();
        self.record.status = status.as_u16();
        self.record.bytes_in = bytes_in;
        self.record.error_code = response
            .extensions()
            .get::<ErrorLog>()
            .map(|log| log.code.clone());
        self.count_head(&response);
        response.map(|body| {
            BodyExt::boxed(Logged {
                body,
                exchange: self,
            })
        })
    }

    fn count_head(&self, response: &Response<Body>) {
        let (metrics, record) = (&self.metrics, &self.record);
        let route = RouteLabels {
            route: record.route,
        };
        metrics
            .requests
            .get_or_create(&RequestLabels {
                route: record.route,
                method: record.method,
                status: record.status,
            })
            .inc();
        metrics
            .latency
            .get_or_create(&route)
            .observe(self.started.elapsed().as_secs_f64());
        metrics
            .bytes_in
            .get_or_create(&route)
            .inc_by(record.bytes_in);
        if let Some(code) = record.error_code.as_deref()
            && let Some(fenced) = FENCED.iter().copied().find(|c| *c == code)
        {
            metrics.fenced.get_or_create(&kind(fenced)).inc();
        }
        if let Some(check) = response.extensions().get::<ChunkCheck>() {
            let present = check.asked.saturating_sub(check.missing);
            let checked = &metrics.chunks_checked;
            checked
                .get_or_create(&kind("present"))
                .inc_by(present as u64);
            checked
                .get_or_create(&kind("missing"))
                .inc_by(check.missing as u64);
        }
        self.count_snapshot(response.status());
    }

    /// Snapshot commits and chunk uploads, read from the route and status.
    fn count_snapshot(&self, status: StatusCode) {
        if !status.is_success() {
            return;
        }
        let (route, method) = (self.record.route, self.record.method);
        let metrics = &self.metrics;
        let is_put = method == "PUT" || method == "POST";
        if route.ends_with("/db-snapshot") && is_put {
            metrics.snapshot_pushes.get_or_create(&kind("whole")).inc();
        } else if route.ends_with("/db-snapshot/manifest") && method == "PUT" {
            metrics
                .snapshot_pushes
                .get_or_create(&kind("manifest"))
                .inc();
        } else if route.ends_with("/db-snapshot/chunks/{sha256}") && method == "PUT" {
            let fate = if status == StatusCode::CREATED {
                "stored"
            } else {
                "already_present"
            };
            metrics.chunk_uploads.get_or_create(&kind(fate)).inc();
        }
    }

    fn sent(&mut self, bytes: usize) {
        self.record.bytes_out = self
            .record
            .bytes_out
            .saturating_add(u64::try_from(bytes).unwrap_or(u64::MAX));
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let record = &mut self.record;
        record.duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        self.metrics
            .bytes_out
            .get_or_create(&RouteLabels {
                route: record.route,
            })
            .inc_by(record.bytes_out);
        tracing::info!(
            target: "stasis::request",
            request_id = record.request_id.as_str(),
            method = record.method,
            route = record.route,
            town = record.town.as_deref(),
            rig = record.rig.as_deref(),
            agent = record.agent.as_deref(),
            status = record.status,
            error_code = record.error_code.as_deref(),
            bytes_in = record.bytes_in,
            bytes_out = record.bytes_out,
            duration_ms = record.duration_ms,
            "request"
        );
    }
}

/// A response body that counts what it sends; its request is logged when
/// hyper drops it (after the last frame, or when the connection goes).
struct Logged {
    body: Body,
    exchange: Exchange,
}

impl hyper::body::Body for Logged {
    type Data = Bytes;
    type Error = Cut;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Cut>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.exchange.sent(data.len());
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Counts a live tail open for as long as its stream lives.
pub struct TailOpen(Arc<Metrics>);

impl TailOpen {
    /// Counts one more tail open.
    pub fn new(metrics: &Arc<Metrics>) -> Self {
        metrics.tails_open.inc();
        Self(Arc::clone(metrics))
    }
}

impl Drop for TailOpen {
    fn drop(&mut self) {
        self.0.tails_open.dec();
    }
}
