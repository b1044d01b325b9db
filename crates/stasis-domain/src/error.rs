//! The one error type of the rules, mapped onto HTTP statuses by the API
//! crate and onto the WIT `error` variant by the components.

use serde::{Deserialize, Serialize};

/// A refusal: a stable snake_case code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// Stable, machine-readable, snake_case.
    pub code: String,
    /// Readable explanation of what was wrong and what is allowed.
    pub message: String,
}

impl Refusal {
    /// Builds a refusal.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A fenced write: which container holds the town instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FenceRefusal {
    /// `container_fenced` (another container has taken the town over) or
    /// `container_not_current` (this container never heartbeat).
    pub code: String,
    /// Readable explanation, naming both containers.
    pub message: String,
    /// The container that holds the town now, when there is one.
    pub current_container_id: Option<String>,
}

/// Why an operation did not happen. Nothing was changed in any case.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum DomainError {
    /// The input breaks the contract (HTTP 400).
    #[error("{}", .0.message)]
    InvalidInput(Refusal),
    /// The thing asked for does not exist (404).
    #[error("{}", .0.message)]
    NotFound(Refusal),
    /// The request conflicts with the current state (409).
    #[error("{}", .0.message)]
    Conflict(Refusal),
    /// A precondition such as If-Match failed (412).
    #[error("{}", .0.message)]
    PreconditionFailed(Refusal),
    /// A size or count limit was passed (413).
    #[error("{message}")]
    TooLarge {
        /// Stable code, e.g. `event_too_large`.
        code: String,
        /// Readable explanation.
        message: String,
        /// The limit passed, in the unit the code names.
        limit: u64,
    },
    /// The cursor points before the oldest retained event (410).
    #[error("cursor expired: events before seq {first_seq} were dropped by retention")]
    CursorExpired {
        /// The oldest seq still readable.
        first_seq: u64,
    },
    /// A snapshot manifest names chunks the agent's store does not hold
    /// (409 `chunks_missing`, listing them).
    #[error("the manifest names {} chunk(s) this agent's store does not hold", .missing.len())]
    ChunksMissing {
        /// Their lowercase hex sha256s, in manifest order, once each.
        missing: Vec<String>,
    },
    /// Not ready yet; retry later (503).
    #[error("{}", .0.message)]
    Unavailable(Refusal),
    /// A write from a container that is not the town's current one (409);
    /// see [`crate::fence`].
    #[error("{}", .0.message)]
    Fenced(FenceRefusal),
    /// The storage underneath failed (500).
    #[error("storage failure: {0}")]
    Storage(String),
}

impl DomainError {
    /// The stable snake_case code of this error.
    pub fn code(&self) -> &str {
        match self {
            Self::InvalidInput(r)
            | Self::NotFound(r)
            | Self::Conflict(r)
            | Self::PreconditionFailed(r)
            | Self::Unavailable(r) => &r.code,
            Self::TooLarge { code, .. } => code,
            Self::Fenced(refusal) => &refusal.code,
            Self::CursorExpired { .. } => "cursor_expired",
            Self::ChunksMissing { .. } => "chunks_missing",
            Self::Storage(_) => "storage_error",
        }
    }

    /// Shorthand for a 400 refusal.
    pub fn invalid(code: &str, message: impl Into<String>) -> Self {
        Self::InvalidInput(Refusal::new(code, message))
    }

    /// Shorthand for a 413 refusal.
    pub fn too_large(code: &str, message: impl Into<String>, limit: u64) -> Self {
        Self::TooLarge {
            code: code.to_owned(),
            message: message.into(),
            limit,
        }
    }
}

impl From<crate::sql::StorageError> for DomainError {
    fn from(err: crate::sql::StorageError) -> Self {
        Self::Storage(err.to_string())
    }
}
