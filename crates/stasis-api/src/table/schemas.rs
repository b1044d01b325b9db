//! Types for bodies no type reads or writes: event pages, errors and probe
//! answers are written as text, an append's body is read by a strict parser
//! (`append_body`). They give those bodies their schemas, and
//! `openapi/tests.rs` checks the text against them. The route table names
//! them; the OpenAPI document shows them.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]
#![expect(
    dead_code,
    reason = "these types give schemas only; their bodies are written as text"
)]

use schemars::JsonSchema;
use serde_json::Value;

/// A probe's answer.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Health {
    /// `ok`.
    pub status: HealthStatus,
}

/// The one status a probe answers with 200.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// Ready (or alive).
    Ok,
}

/// A page of an agent's event log ([`crate::events::page_json`]).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventPage {
    /// The events, in seq order.
    pub events: Vec<EventView>,
    /// The cursor to resume from: the last seq examined.
    pub next_after: u64,
    /// More events follow `next_after`.
    pub has_more: bool,
    /// The oldest seq still kept (0 while empty).
    pub first_seq: u64,
    /// The newest seq ever assigned (0 while empty).
    pub last_seq: u64,
}

/// One stored event ([`crate::events::write_event`]).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct EventView {
    /// Its position in the log.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// The payload, as appended.
    pub data: Value,
    /// When it was appended, ms since the epoch.
    pub created_at: i64,
}

/// Every error: `{"error": {"code", "message", ...}}`
/// ([`crate::ApiError::into_response`]).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// An error's code, message and the fields some codes add.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ErrorDetail {
    /// Stable snake_case code; each operation lists its own.
    pub code: String,
    /// Readable explanation.
    pub message: String,
    /// 413: the limit broken.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// 410 `cursor_expired`: the oldest seq still kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seq: Option<u64>,
    /// 503: seconds to wait (also the `Retry-After` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// 405: the methods the route takes (also the `Allow` header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// 401 and 403: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// 409 `chunks_missing`: the chunks the store lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
    /// 409 `container_fenced` / `container_not_current`: the holder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_container_id: Option<Option<String>>,
    /// 408 `body_too_slow`: the minimum rate, bytes a second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rate: Option<u64>,
}

/// An append's body: the events, and the producer stamp that makes a retry
/// safe. Unknown fields are ignored.
#[derive(JsonSchema)]
pub struct AppendRequest {
    /// 1 to 1,000 events.
    events: Vec<AppendEvent>,
    /// Names the producer whose batches are deduplicated (with
    /// `producer_seq`).
    #[serde(default)]
    producer_id: Option<String>,
    /// The batch's number for its producer, an integer >= 0.
    #[serde(default)]
    producer_seq: Option<u64>,
}

/// One event to append.
#[derive(JsonSchema)]
struct AppendEvent {
    /// 1 to 256 bytes.
    #[serde(rename = "type")]
    event_type: String,
    /// An id.
    #[serde(default)]
    session_id: Option<String>,
    /// Any JSON value (`null` when missing).
    #[serde(default)]
    data: serde_json::Value,
}
