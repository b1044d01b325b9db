//! An agent's append-only event log.
//!
//! - `seq` is per agent, starts at 1 and grows by one per event, with no gaps
//!   at assignment (later deletions of a session's events leave holes, never
//!   reuse a seq).
//! - A batch is all or nothing. A batch stamped with `producer_id` +
//!   `producer_seq` that was already appended appends nothing and answers
//!   with the original seqs (`duplicate: true`).
//! - Reads resume from an exclusive cursor `after`. Retention keeps the newest
//!   `max_events`; a cursor older than that gets [`DomainError::CursorExpired`].

mod append;
mod outcome;
mod producers;
mod read;
mod retention;
pub(crate) mod schema;

pub use append::append;
pub use outcome::AppendOutcome;
pub use read::{of_types, read, sessions, state};
pub use schema::migrate;

use crate::{DomainError, limits};
use serde::{Deserialize, Serialize};

/// One event to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewEvent {
    /// The event's type, e.g. `message.created`.
    pub event_type: String,
    /// The session it belongs to, if any; the first event naming a session
    /// creates it.
    pub session_id: Option<String>,
    /// The payload, as JSON text.
    pub data: String,
}

impl NewEvent {
    /// Builds an event.
    pub fn new(event_type: &str, session_id: Option<&str>, data: &str) -> Self {
        Self {
            event_type: event_type.to_owned(),
            session_id: session_id.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    /// The size the event limit applies to: data, type and session id.
    pub fn encoded_len(&self) -> u64 {
        let len = self.data.len()
            + self.event_type.len()
            + self.session_id.as_ref().map_or(0, String::len);
        u64::try_from(len).unwrap_or(u64::MAX)
    }
}

/// Identifies a batch so that a retry appends nothing twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProducerStamp {
    /// Who produced the batch (e.g. a container's id).
    pub producer_id: String,
    /// The producer's own counter for the batch.
    pub producer_seq: u64,
}

/// A batch of events to append in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppendBatch {
    /// The events, in order.
    pub events: Vec<NewEvent>,
    /// Set for idempotent retries.
    pub producer: Option<ProducerStamp>,
}

impl AppendBatch {
    /// A batch without a producer stamp.
    pub fn new(events: Vec<NewEvent>) -> Self {
        Self {
            events,
            producer: None,
        }
    }

    /// Checks every rule a batch must meet before anything is written.
    pub fn validate(&self) -> Result<(), DomainError> {
        if self.events.is_empty() {
            return Err(DomainError::invalid(
                "invalid_request",
                "events must hold at least one event",
            ));
        }
        let count = u64::try_from(self.events.len()).unwrap_or(u64::MAX);
        if count > limits::MAX_BATCH_EVENTS {
            return Err(DomainError::too_large(
                "batch_too_large",
                format!(
                    "a batch holds at most {} events, this one has {count}",
                    limits::MAX_BATCH_EVENTS
                ),
                limits::MAX_BATCH_EVENTS,
            ));
        }
        for (index, event) in self.events.iter().enumerate() {
            validate_event(index, event)?;
        }
        if let Some(stamp) = &self.producer {
            crate::ids::check_id("producer_id", &stamp.producer_id)?;
            if i64::try_from(stamp.producer_seq).is_err() {
                return Err(DomainError::invalid(
                    "invalid_request",
                    "producer_seq must be below 2^63",
                ));
            }
        }
        Ok(())
    }
}

fn validate_event(index: usize, event: &NewEvent) -> Result<(), DomainError> {
    if event.event_type.is_empty() || event.event_type.len() > limits::MAX_EVENT_TYPE_BYTES {
        return Err(DomainError::invalid(
            "invalid_request",
            format!(
                "events[{index}].type must be 1 to {} bytes",
                limits::MAX_EVENT_TYPE_BYTES
            ),
        ));
    }
    if let Some(session) = &event.session_id {
        crate::ids::check_id(&format!("events[{index}].session_id"), session)?;
    }
    if event.encoded_len() > limits::MAX_EVENT_BYTES {
        return Err(DomainError::too_large(
            "event_too_large",
            format!(
                "events[{index}] is {} bytes; an event holds at most {} bytes",
                event.encoded_len(),
                limits::MAX_EVENT_BYTES
            ),
            limits::MAX_EVENT_BYTES,
        ));
    }
    crate::json_limits::check(&event.data).map_err(|breach| {
        DomainError::invalid(
            "invalid_request",
            format!("events[{index}].data {}", breach.describe()),
        )
    })?;
    Ok(())
}

/// What the runtime decides for each append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendSettings {
    /// The clock, in ms since the epoch.
    pub now_ms: i64,
    /// Retention: events kept per agent.
    pub max_events: u64,
}

impl AppendSettings {
    /// Default retention at the given time.
    pub fn new(now_ms: i64) -> Self {
        Self {
            now_ms,
            max_events: limits::DEFAULT_MAX_EVENTS,
        }
    }
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the agent's log.
    pub seq: u64,
    /// The event's type.
    pub event_type: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// Payload as JSON text.
    pub data: String,
    /// When it was appended, ms since the epoch.
    pub created_at_ms: i64,
}

/// Which events to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadQuery {
    /// Exclusive cursor: events with seq > after.
    pub after: u64,
    /// At most this many events.
    pub limit: u32,
    /// Only this session's events.
    pub session_id: Option<String>,
    /// Only events of this type.
    pub event_type: Option<String>,
}

impl ReadQuery {
    /// Everything after `after`, default limit, no filters.
    pub fn after(after: u64) -> Self {
        Self {
            after,
            limit: limits::DEFAULT_READ_LIMIT,
            session_id: None,
            event_type: None,
        }
    }
}

/// One page of a read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadPage {
    /// The events, in seq order.
    pub events: Vec<Event>,
    /// Resume from here: the last seq examined.
    pub next_after: u64,
    /// More matching events may follow `next_after`.
    pub has_more: bool,
    /// The oldest seq still readable (0 while the log is empty).
    pub first_seq: u64,
    /// The newest seq ever assigned (0 while the log is empty).
    pub last_seq: u64,
}

/// The log's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LogState {
    /// The oldest seq retention keeps (0 before the first event). Deleting a
    /// session's events leaves it: it is the horizon cursors expire at.
    pub first_seq: u64,
    /// The newest seq assigned (0 while empty).
    pub last_seq: u64,
    /// Events currently stored.
    pub event_count: u64,
}

/// A session as the log knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// The session's id.
    pub session_id: String,
    /// `running`, `completed`, `failed` or `closed`.
    pub status: String,
    /// Seq of its oldest stored event.
    pub first_seq: u64,
    /// Seq of its newest event.
    pub last_seq: u64,
    /// Its events still stored.
    pub event_count: u64,
    /// First seen, ms since the epoch.
    pub created_at_ms: i64,
    /// Last event, ms since the epoch.
    pub updated_at_ms: i64,
}
