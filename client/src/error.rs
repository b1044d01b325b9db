//! The one error type of the client, and the exit code each error maps to.

use std::time::Duration;

/// Exit codes of the `stasis-client` binary, one per outcome a script may want to branch on.
pub mod exit {
    /// Everything asked for was done.
    pub const OK: u8 = 0;
    /// A local failure: a file, a SQLite database, bad local input.
    pub const LOCAL: u8 = 1;
    /// The command line was not understood (clap's own code).
    pub const USAGE: u8 = 2;
    /// `snapshot pull`: the server holds no snapshot for that agent (nothing was written).
    pub const NO_SNAPSHOT: u8 = 3;
    /// The server refused the request (a 4xx answer such as 401, 403, 412 or 413).
    pub const REFUSED: u8 = 4;
    /// The server could not be reached, or kept failing (timeouts, 5xx, 503), after bounded retries.
    pub const UNAVAILABLE: u8 = 5;
    /// Bytes did not match their sha256 (a download, the server's receipt of an upload, or
    /// `500 snapshot_corrupt`: the server's stored copy).
    pub const INTEGRITY: u8 = 6;
    /// `boot` or `drain`: at least one agent could not be hydrated or flushed (in time).
    pub const PARTIAL: u8 = 7;
    /// `sidecar`: its shutdown budget ran out before every event was forwarded and the last
    /// snapshot pushed.
    pub const OVER_BUDGET: u8 = 8;
    /// Fenced: another container has taken the town over from this one (409
    /// `container_fenced`, a heartbeat answered `fenced`, or a drain that finds a newer
    /// container), or this container never heartbeat (409 `container_not_current`). It stopped
    /// writing at once; it must never write again.
    pub const FENCED: u8 = 9;
    /// `supervise`: the runtime crashed more often than its start limit allows
    /// (`--start-limit-burst` within `--start-limit-interval`), and the supervisor gave up.
    pub const GAVE_UP: u8 = 10;
}

/// The code of a `500` for stored bytes that no longer match their sha256.
const SNAPSHOT_CORRUPT: &str = "snapshot_corrupt";

/// What went wrong. Every variant says which request or file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client is not configured correctly (no URL, a malformed URL or duration).
    #[error("configuration: {0}")]
    Config(String),

    /// An id that the server would refuse (`[A-Za-z0-9_.:-]{1,128}`, not `.` or `..`).
    #[error("invalid {what} id {value:?}: ids match [A-Za-z0-9_.:-]{{1,128}} and are not . or ..")]
    InvalidId {
        /// Which id (town, rig, agent, ...).
        what: &'static str,
        /// The value given.
        value: String,
    },

    /// A local file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A SQLite operation on a local database failed.
    #[error("SQLite: {context}: {source}")]
    Sqlite {
        /// What was being done, naming the database.
        context: String,
        /// The underlying error.
        #[source]
        source: rusqlite::Error,
    },

    /// The request could not be exchanged with the server (connect, timeout, broken connection).
    #[error("{what}: {source}")]
    Transport {
        /// The request (`METHOD url`).
        what: String,
        /// The underlying error.
        #[source]
        source: ureq::Error,
    },

    /// The server answered with an error status, decoded from its `{"error": {...}}` body.
    #[error("{what}: the server answered {status} {code}: {message}")]
    Api {
        /// The request (`METHOD path`).
        what: String,
        /// The HTTP status.
        status: u16,
        /// The error code (`not_found`, `unauthorized`, ...), or `http_<status>` without a body.
        code: String,
        /// The server's message, or the start of a non-JSON body.
        message: String,
        /// The whole `error` object, with its extra fields (`limit`, `first_seq`, ...).
        detail: Option<serde_json::Value>,
    },

    /// Bytes did not hash to the sha256 they were announced with.
    #[error("sha256 mismatch for {what}: expected {expected}, got {actual}")]
    Integrity {
        /// Which transfer.
        what: String,
        /// The announced hash.
        expected: String,
        /// The hash of the bytes seen.
        actual: String,
    },

    /// The server answered something the contract does not allow (a missing header, bad JSON).
    #[error("{what}: unexpected answer: {detail}")]
    Protocol {
        /// The request.
        what: String,
        /// What was wrong with the answer.
        detail: String,
    },

    /// A retried operation kept failing until its attempt or time bound.
    #[error("{what}: gave up after {attempts} attempt(s) in {elapsed:.1?}; last error: {last}")]
    GaveUp {
        /// The operation.
        what: String,
        /// How many attempts were made.
        attempts: u32,
        /// Time spent.
        elapsed: Duration,
        /// The error of the last attempt.
        #[source]
        last: Box<Error>,
    },

    /// A snapshot over the server's limit: refused locally, before uploading it.
    #[error("{what}: {size} bytes is over the snapshot limit of {limit} bytes")]
    TooLarge {
        /// The file.
        what: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },

    /// Another container has taken the town over: this one is fenced. Its snapshots must not
    /// overwrite the newer ones, nor may it set the town draining.
    #[error(
        "container {ours} is fenced: container {current} has taken the town over, so this one stops writing"
    )]
    Superseded {
        /// This container.
        ours: String,
        /// The container that took over (the town's current container, or the registry's).
        current: String,
    },

    /// The agent runtime (`kilo serve`) did not answer, or not as the sidecar expects.
    #[error("the agent runtime: {what}: {detail}")]
    Runtime {
        /// The request or step (`GET http://127.0.0.1:4096/event`).
        what: String,
        /// What went wrong.
        detail: String,
    },

    /// The operation's time budget ran out (`drain --budget`).
    #[error("{what}: the time budget ran out")]
    OutOfTime {
        /// The operation.
        what: String,
    },

    /// A workspace could not be scanned, read back or restored (a file, a manifest that breaks
    /// the rules, bytes that do not match their sha256, a restore into a non-empty folder).
    #[error("workspace: {0}")]
    Workspace(#[from] Box<crate::workspace::WorkspaceError>),
}

impl From<crate::workspace::WorkspaceError> for Error {
    fn from(error: crate::workspace::WorkspaceError) -> Self {
        Error::Workspace(Box::new(error))
    }
}

impl Error {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Wraps a SQLite error with what was being done.
    pub fn sqlite(context: impl Into<String>, source: rusqlite::Error) -> Self {
        Error::Sqlite {
            context: context.into(),
            source,
        }
    }

    /// The error a retry loop ended on (itself, unless this is [`Error::GaveUp`]).
    pub fn root(&self) -> &Error {
        match self {
            Error::GaveUp { last, .. } => last.root(),
            other => other,
        }
    }

    /// The HTTP status the server answered, when this is an API error.
    pub fn status(&self) -> Option<u16> {
        match self.root() {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The server's error code (`snapshot_not_found`, `unauthorized`, ...), when this is an
    /// API error.
    pub fn code(&self) -> Option<&str> {
        match self.root() {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// True when stasis fenced this container: 409 `container_fenced` (another container has
    /// taken the town over) or `container_not_current` (it never heartbeat), or
    /// [`Error::Superseded`].
    pub fn is_fenced(&self) -> bool {
        matches!(self.root(), Error::Superseded { .. })
            || matches!(
                self.code(),
                Some("container_fenced" | "container_not_current")
            )
    }

    /// True for a server error that a retry cannot cure although its status is retryable:
    /// `500 snapshot_corrupt` (the stored bytes no longer match their sha256).
    pub fn is_permanent(&self) -> bool {
        self.code() == Some(SNAPSHOT_CORRUPT)
    }

    /// The exit code of the binary for this error (see [`exit`]).
    pub fn exit_code(&self) -> u8 {
        if self.is_fenced() {
            return exit::FENCED;
        }
        match self.root() {
            Error::Api { code, .. } if code == SNAPSHOT_CORRUPT => exit::INTEGRITY,
            Error::Config(_)
            | Error::InvalidId { .. }
            | Error::Io { .. }
            | Error::Sqlite { .. } => exit::LOCAL,
            Error::Api { status, .. } if *status < 500 => exit::REFUSED,
            Error::TooLarge { .. } => exit::REFUSED,
            Error::Superseded { .. } => exit::FENCED,
            Error::Api { .. }
            | Error::Transport { .. }
            | Error::Protocol { .. }
            | Error::Runtime { .. }
            | Error::OutOfTime { .. } => exit::UNAVAILABLE,
            Error::Integrity { .. } => exit::INTEGRITY,
            Error::GaveUp { .. } => exit::UNAVAILABLE,
            Error::Workspace(error) => workspace_exit_code(error),
        }
    }
}

/// A workspace failure's exit code: the server's or the fetch's own when a chunk could not be
/// fetched, integrity for bytes that do not match, local for the rest (files, rules, patterns,
/// a restore target that is not empty).
fn workspace_exit_code(error: &crate::workspace::WorkspaceError) -> u8 {
    use crate::workspace::WorkspaceError as W;
    match error {
        W::Fetch { source, .. } => source.exit_code(),
        W::Integrity { .. } => exit::INTEGRITY,
        W::Io { .. }
        | W::Unstable { .. }
        | W::Manifest(_)
        | W::UnsupportedChunking(_)
        | W::Pattern { .. }
        | W::TargetNotEmpty { .. }
        | W::ChangedSinceScan { .. }
        | W::UnknownChunk(_) => exit::LOCAL,
    }
}

/// The client's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn api(status: u16) -> Error {
        Error::Api {
            what: "GET /x".into(),
            status,
            code: "c".into(),
            message: "m".into(),
            detail: None,
        }
    }

    #[test]
    fn client_errors_exit_as_refused_and_server_errors_as_unavailable() {
        assert_eq!(api(412).exit_code(), exit::REFUSED);
        assert_eq!(api(503).exit_code(), exit::UNAVAILABLE);
    }

    #[test]
    fn a_corrupt_stored_snapshot_is_final_and_exits_as_integrity() {
        let corrupt = Error::Api {
            what: "GET /x".into(),
            status: 500,
            code: "snapshot_corrupt".into(),
            message: "m".into(),
            detail: None,
        };
        assert!(corrupt.is_permanent());
        assert!(!api(500).is_permanent());
        assert_eq!(corrupt.exit_code(), exit::INTEGRITY);
        assert_eq!(corrupt.code(), Some("snapshot_corrupt"));
    }

    #[test]
    fn a_gave_up_error_exits_with_the_code_of_its_last_attempt() {
        let gave_up = Error::GaveUp {
            what: "PUT".into(),
            attempts: 3,
            elapsed: Duration::from_secs(1),
            last: Box::new(api(401)),
        };
        assert_eq!(gave_up.exit_code(), exit::REFUSED);
        assert_eq!(gave_up.status(), Some(401));
    }

    #[test]
    fn a_fenced_container_exits_with_its_own_code() {
        let fenced = Error::Api {
            what: "POST /x".into(),
            status: 409,
            code: "container_fenced".into(),
            message: "m".into(),
            detail: None,
        };
        assert_eq!(fenced.exit_code(), exit::FENCED);
        let superseded = Error::Superseded {
            ours: "a".into(),
            current: "b".into(),
        };
        assert_eq!(superseded.exit_code(), exit::FENCED);
        assert!(superseded.to_string().contains("container b"));
        assert_eq!(api(409).exit_code(), exit::REFUSED);
    }

    #[test]
    fn workspace_failures_exit_by_what_failed() {
        use crate::workspace::WorkspaceError;
        let not_empty: Error = WorkspaceError::TargetNotEmpty {
            path: "/w".into(),
            detail: "the folder is not empty".into(),
        }
        .into();
        assert_eq!(not_empty.exit_code(), exit::LOCAL);
        assert!(not_empty.to_string().contains("never merges"));
        let hash = stasis_domain::workspace::ContentHash::of(b"x");
        let torn: Error = WorkspaceError::Integrity {
            what: "a chunk".into(),
            expected: hash,
            actual: hash,
        }
        .into();
        assert_eq!(torn.exit_code(), exit::INTEGRITY);
        let fetch: Error = WorkspaceError::Fetch {
            hash,
            source: Box::new(api(503)),
        }
        .into();
        assert_eq!(fetch.exit_code(), exit::UNAVAILABLE);
    }
}
