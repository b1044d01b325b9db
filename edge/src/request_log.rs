//! One JSON line per request (`console.log`, kept by Workers Logs): the
//! record the host logs too ([`RequestRecord`]), and the request id echoed
//! on the response. Where the `STASIS_REQUESTS` Analytics Engine binding
//! exists, the record is also written there as a data point, the edge's
//! counterpart of the host's `/metrics`. The worker's duration runs to the response's head, and
//! a streamed response's `bytes_out` is its `Content-Length` when it has one
//! (its body is sent after the handler returns).

use bytes::Bytes;
use stasis_api::{
    ErrorLog,
    request_log::{RequestRecord, client_request_id},
};
use worker::{
    AnalyticsEngineDataPointBuilder, AnalyticsEngineDataset, Env, Headers, Response, Result,
};

/// The Analytics Engine binding requests are written to (wrangler.toml).
const ANALYTICS_BINDING: &str = "STASIS_REQUESTS";

/// The Analytics Engine dataset, when the worker has the binding.
pub fn analytics(env: &Env) -> Option<AnalyticsEngineDataset> {
    env.analytics_engine(ANALYTICS_BINDING).ok()
}

/// A worker response, with the error code of an error response and its
/// body's length when known.
pub struct Answered {
    response: Response,
    error_code: Option<String>,
    bytes_out: Option<u64>,
}

impl Answered {
    /// A whole response from the API.
    pub fn full(response: http::Response<Bytes>) -> Result<Self> {
        let error_code = response
            .extensions()
            .get::<ErrorLog>()
            .map(|log| log.code.clone());
        let bytes_out = u64::try_from(response.body().len()).ok();
        Ok(Self {
            response: crate::convert::to_worker(response)?,
            error_code,
            bytes_out,
        })
    }

    /// A streamed response (a live tail, an export, a snapshot download).
    pub fn streamed(response: Response) -> Self {
        Self {
            response,
            error_code: None,
            bytes_out: None,
        }
    }
}

/// A request being answered.
pub struct Entry {
    record: RequestRecord,
    started_ms: f64,
}

impl Entry {
    /// Starts the clock on a request.
    pub fn start(head: &http::request::Parts) -> Self {
        let id = client_request_id(&head.headers).map_or_else(made_up_id, str::to_owned);
        let mut record = RequestRecord::start(&id, &head.method, head.uri.path());
        record.bytes_in = content_length(
            head.headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()),
        );
        Self {
            record,
            started_ms: js_sys::Date::now(),
        }
    }

    /// Logs the request (and writes its data point) and echoes its id on
    /// the response.
    pub fn finish(
        mut self,
        answered: Result<Answered>,
        analytics: Option<&AnalyticsEngineDataset>,
    ) -> Result<Response> {
        self.record.duration_ms = js_sys::Date::now() - self.started_ms;
        let answered = match answered {
            Ok(answered) => answered,
            Err(err) => {
                self.record.status = 500;
                self.record.error_code = Some("worker_error".to_owned());
                self.record_it(analytics);
                return Err(err);
            }
        };
        let response = answered.response;
        self.record.status = response.status_code();
        self.record.error_code = answered.error_code;
        self.record.bytes_out = match answered.bytes_out {
            Some(length) => length,
            None => content_length(response.headers().get("content-length")?.as_deref()),
        };
        self.record_it(analytics);
        // A response fetched from a Durable Object has immutable headers:
        // the id goes on a copy.
        let headers = Headers::new();
        for (name, value) in response.headers() {
            headers.append(&name, &value)?;
        }
        headers.set("x-request-id", &self.record.request_id)?;
        Ok(response.with_headers(headers))
    }
}

impl Entry {
    /// The log line, and the data point where the binding exists (a failed
    /// write is logged, never the request's failure).
    fn record_it(&self, analytics: Option<&AnalyticsEngineDataset>) {
        worker::console_log!("{}", self.record.to_json());
        let Some(dataset) = analytics else {
            return;
        };
        let point = self.record.data_point();
        let written = AnalyticsEngineDataPointBuilder::new()
            .indexes([point.index.as_str()])
            .blobs(point.blobs)
            .doubles(point.doubles)
            .write_to(dataset);
        if let Err(err) = written {
            worker::console_warn!("the request's analytics data point was not written: {err}");
        }
    }
}

fn content_length(value: Option<&str>) -> u64 {
    value.and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// 16 random hex digits, or `-` if the runtime gives no randomness.
fn made_up_id() -> String {
    let mut bytes = [0u8; 8];
    match getrandom::getrandom(&mut bytes) {
        Ok(()) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        Err(_) => "-".to_owned(),
    }
}
