//! What an append answers. The HTTP contract's OpenAPI document describes
//! it (schemars derives it), so it lives apart from the log's logic.

#![cfg_attr(
    feature = "schema",
    allow(
        clippy::disallowed_macros,
        clippy::disallowed_methods,
        reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
    )
)]

use serde::{Deserialize, Serialize};

/// The seqs a batch got.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppendOutcome {
    /// Seq of the batch's first event.
    pub first_seq: u64,
    /// Seq of the batch's last event.
    pub last_seq: u64,
    /// True when this was a retry of a batch already appended.
    pub duplicate: bool,
}
