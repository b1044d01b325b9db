//! Errors in the contract's shape: `{"error": {"code", "message", ...}}`.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Map, Value};
use stasis_domain::DomainError;

/// An error response: status, stable code, message, and extra fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// Stable snake_case code.
    pub code: String,
    /// Readable explanation.
    pub message: String,
    /// Fields added beside code and message (`limit`, `first_seq`, ...).
    pub extra: Map<String, Value>,
    /// Headers the error carries (`Allow`, `Retry-After`).
    pub headers: Vec<(header::HeaderName, String)>,
    /// What went wrong inside, for the server's log only: it may name files
    /// or carry a backtrace, so it is never sent to the client.
    pub cause: Option<Box<str>>,
}

/// Attached to an error response's extensions, so that the runtime can log
/// its code and cause without parsing the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorLog {
    /// The error's code.
    pub code: String,
    /// The inside cause ([`ApiError::cause`]), else the public message.
    pub detail: String,
}

impl ApiError {
    /// An error with no extra fields.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            code: code.to_owned(),
            message: message.into(),
            extra: Map::new(),
            headers: Vec::new(),
            cause: None,
        }
    }

    /// Adds a field beside code and message.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Adds a header.
    pub fn with_header(mut self, name: header::HeaderName, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// 404 for a path no route matches.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such endpoint: {path}"),
        )
    }

    /// 400 `invalid_request` naming what was wrong.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// 413 for a body over `limit` bytes.
    pub fn body_too_large(limit: u64) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body may hold at most {limit} bytes"),
        )
        .with("limit", limit)
    }

    /// 500 for a failure that is ours, not the caller's. The client gets a
    /// generic message; `cause` goes to the server's log only.
    pub fn internal(cause: impl Into<String>) -> Self {
        let mut error = Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the server failed to complete the request; its log holds the cause",
        );
        error.cause = Some(cause.into().into_boxed_str());
        error
    }

    /// Renders the JSON response, with an [`ErrorLog`] in its extensions.
    pub fn into_response(self) -> Response<Bytes> {
        let log = ErrorLog {
            code: self.code.clone(),
            detail: self
                .cause
                .map_or_else(|| self.message.clone(), String::from),
        };
        let mut error = Map::new();
        error.insert("code".into(), Value::String(self.code));
        error.insert("message".into(), Value::String(self.message));
        error.extend(self.extra);
        let mut response = crate::reply::json(self.status, &ErrorBody { error });
        response.extensions_mut().insert(log);
        for (name, value) in self.headers {
            if let Ok(value) = HeaderValue::from_str(&value) {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

/// The error document: `{"error": {...}}`.
#[derive(serde::Serialize)]
struct ErrorBody {
    error: Map<String, Value>,
}

impl From<DomainError> for ApiError {
    fn from(err: DomainError) -> Self {
        let message = err.to_string();
        match err {
            DomainError::InvalidInput(r) => Self::new(StatusCode::BAD_REQUEST, &r.code, message),
            DomainError::NotFound(r) => Self::new(StatusCode::NOT_FOUND, &r.code, message),
            DomainError::Conflict(r) => Self::new(StatusCode::CONFLICT, &r.code, message),
            DomainError::PreconditionFailed(r) => {
                Self::new(StatusCode::PRECONDITION_FAILED, &r.code, message)
            }
            DomainError::TooLarge { code, limit, .. } => {
                Self::new(StatusCode::PAYLOAD_TOO_LARGE, &code, message).with("limit", limit)
            }
            DomainError::CursorExpired { first_seq } => {
                Self::new(StatusCode::GONE, "cursor_expired", message).with("first_seq", first_seq)
            }
            DomainError::ChunksMissing { missing } => {
                Self::new(StatusCode::CONFLICT, "chunks_missing", message).with("missing", missing)
            }
            DomainError::Unavailable(r) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, &r.code, message)
                    .with("retry_after", 1)
                    .with_header(header::RETRY_AFTER, "1")
            }
            DomainError::Fenced(refusal) => {
                Self::new(StatusCode::CONFLICT, &refusal.code, refusal.message)
                    .with("current_container_id", refusal.current_container_id)
            }
            DomainError::Storage(detail) => Self::internal(format!("storage failure: {detail}")),
        }
    }
}
