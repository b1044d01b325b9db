//! One record per request, the same on both runtimes: the host writes it
//! as a log line's fields (text or JSON), the edge as one JSON line.

use crate::route_template::{self, RouteLabel};
use http::{HeaderMap, Method};
use serde::Serialize;

/// What one request was and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// The request's id (`X-Request-Id`, kept or made).
    pub request_id: String,
    /// The HTTP method (anything unusual is `OTHER`).
    pub method: &'static str,
    /// The route template ([`crate::route::Endpoint::template`]).
    pub route: &'static str,
    /// The town the path names, when a valid id.
    pub town: Option<String>,
    /// The rig the path names, when a valid id.
    pub rig: Option<String>,
    /// The agent the path names, when a valid id.
    pub agent: Option<String>,
    /// The response's status.
    pub status: u16,
    /// The error's code, for an error response.
    pub error_code: Option<String>,
    /// Request body bytes received.
    pub bytes_in: u64,
    /// Response body bytes sent.
    pub bytes_out: u64,
    /// From the request's head to the response's last byte, in
    /// milliseconds.
    pub duration_ms: f64,
}

impl RequestRecord {
    /// A record of a request not answered yet.
    pub fn start(request_id: &str, method: &Method, raw_path: &str) -> Self {
        let RouteLabel {
            template,
            town,
            rig,
            agent,
        } = route_template::label(raw_path);
        Self {
            request_id: request_id.to_owned(),
            method: method_label(method),
            route: template,
            town,
            rig,
            agent,
            status: 0,
            error_code: None,
            bytes_in: 0,
            bytes_out: 0,
            duration_ms: 0.0,
        }
    }

    /// The record as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|err| {
            format!(r#"{{"request_id":"?","error":"the request record did not serialise: {err}"}}"#)
        })
    }
}

/// One request as a Workers Analytics Engine data point: what the edge
/// writes where the host counts into `/metrics`. Queried with SQL over
/// `blob1..blob6` and `double1..double4` (README, "Operating").
#[derive(Debug, Clone, PartialEq)]
pub struct DataPoint {
    /// The sampling key: the town (at most 96 bytes, the index limit), or
    /// empty when the path names none.
    pub index: String,
    /// `route`, `method`, `status`, `error_code` (empty for none), `town`,
    /// `agent` as `rig/agent`.
    pub blobs: [String; 6],
    /// 1 (the request), `duration_ms`, `bytes_in`, `bytes_out`.
    pub doubles: [f64; 4],
}

/// Analytics Engine keeps an index of at most this many bytes.
const MAX_INDEX_BYTES: usize = 96;

impl RequestRecord {
    /// The record as an Analytics Engine data point.
    pub fn data_point(&self) -> DataPoint {
        let town = self.town.clone().unwrap_or_default();
        // Ids are ASCII, so a byte cut is a character cut.
        let index = town.get(..MAX_INDEX_BYTES).unwrap_or(&town).to_owned();
        let agent = match (&self.rig, &self.agent) {
            (Some(rig), Some(agent)) => format!("{rig}/{agent}"),
            _ => String::new(),
        };
        #[allow(
            clippy::cast_precision_loss,
            reason = "byte counts past 2^53 are beyond any request"
        )]
        let doubles = [
            1.0,
            self.duration_ms,
            self.bytes_in as f64,
            self.bytes_out as f64,
        ];
        DataPoint {
            index,
            blobs: [
                self.route.to_owned(),
                self.method.to_owned(),
                self.status.to_string(),
                self.error_code.clone().unwrap_or_default(),
                town,
                agent,
            ],
            doubles,
        }
    }
}

/// The longest `X-Request-Id` kept from a client.
pub const MAX_REQUEST_ID: usize = 64;

/// The client's `X-Request-Id` when it is 1 to [`MAX_REQUEST_ID`] visible
/// ASCII characters (so it cannot forge log lines); else the runtime makes
/// one up.
pub fn client_request_id(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get("x-request-id")?.to_str().ok()?;
    let kept =
        (1..=MAX_REQUEST_ID).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_graphic());
    kept.then_some(value)
}

/// The method as a bounded label: the ones the API knows, else `OTHER`.
pub fn method_label(method: &Method) -> &'static str {
    let known = [
        (Method::GET, "GET"),
        (Method::HEAD, "HEAD"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
    ];
    known
        .into_iter()
        .find(|(known, _)| known == method)
        .map_or("OTHER", |(_, label)| label)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_point_carries_the_labels_as_blobs_and_the_figures_as_doubles() {
        let path = format!("/api/towns/{}/rigs/r/agents/a/events", "t".repeat(128));
        let mut record = RequestRecord::start("id-1", &Method::POST, &path);
        record.status = 409;
        record.error_code = Some("container_fenced".to_owned());
        record.bytes_in = 300;
        record.bytes_out = 120;
        record.duration_ms = 2.5;
        let point = record.data_point();
        assert_eq!(point.index, "t".repeat(96), "the index is cut to 96 bytes");
        assert_eq!(
            point.blobs,
            [
                "/api/towns/{town}/rigs/{rig}/agents/{agent}/events".to_owned(),
                "POST".to_owned(),
                "409".to_owned(),
                "container_fenced".to_owned(),
                "t".repeat(128),
                "r/a".to_owned(),
            ]
        );
        assert_eq!(point.doubles, [1.0, 2.5, 300.0, 120.0]);
        let unmatched = RequestRecord::start("id-2", &Method::GET, "/nope").data_point();
        assert_eq!(
            (unmatched.index.as_str(), unmatched.blobs[0].as_str()),
            ("", "unmatched")
        );
    }

    #[test]
    fn a_record_names_the_template_and_ids_and_serialises_to_one_line() {
        let mut record =
            RequestRecord::start("abc", &Method::POST, "/api/towns/t/rigs/r/agents/a/events");
        record.status = 409;
        record.error_code = Some("container_fenced".into());
        let line = record.to_json();
        assert!(!line.contains('\n'));
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(
            parsed["route"],
            "/api/towns/{town}/rigs/{rig}/agents/{agent}/events"
        );
        assert_eq!(parsed["agent"], "a");
        assert_eq!(parsed["error_code"], "container_fenced");
        let odd = Method::from_bytes(b"BREW").unwrap_or_default();
        assert_eq!(method_label(&odd), "OTHER");
    }
}
