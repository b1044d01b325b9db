//! The contract's numeric limits, in one place.

/// An event's encoded size (its data, type and session id) may not pass this.
pub const MAX_EVENT_BYTES: u64 = 1024 * 1024;
/// Events in one append batch.
pub const MAX_BATCH_EVENTS: u64 = 1_000;
/// Bytes in one append request body.
pub const MAX_BATCH_BYTES: u64 = 4 * 1024 * 1024;
/// Events kept per agent unless configured otherwise.
pub const DEFAULT_MAX_EVENTS: u64 = 10_000;
/// Events returned by one read unless `limit` says otherwise.
pub const DEFAULT_READ_LIMIT: u32 = 1_000;
/// The largest `limit` a read accepts.
pub const MAX_READ_LIMIT: u32 = 10_000;
/// A read page holds at most this many bytes of event data (and always at
/// least one event), so a page of large events cannot
/// exhaust memory; `has_more` tells the reader to continue.
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;
/// An event type's length in bytes.
pub const MAX_EVENT_TYPE_BYTES: usize = 256;
/// Remembered batches per producer for idempotent retries.
pub const PRODUCER_WINDOW: u64 = 1_000;
/// Remembered batches per agent, across all its producers.
pub const MAX_REMEMBERED_BATCHES: u64 = 10_000;
