//! Conformance cases for the stasis HTTP API, run against any running server.
//!
//! The cases in `tests/` check what `docs/http-api.md` promises — status codes,
//! error codes, limits, order of checks — and nothing about how a runtime
//! stores its data, so the same cases run unchanged against the local host
//! (`stasis serve`) and the edge worker (`wrangler dev --local`).
//!
//! Two environment variables point the suite at a server:
//!
//! ```text
//! STASIS_URL=http://127.0.0.1:8787 STASIS_SECRET=<the server's secret> \
//!     cargo test -p stasis-conformance
//! ```
//!
//! (or `STASIS_KEYS` and `STASIS_SIGNING_KEY_ID`, as the server was given
//! them: the suite mints its tokens from the same keys, [`tokens`]).
//!
//! The suite is never skipped silently: without `STASIS_URL` every case fails
//! with a message saying how to run it. Each case works in a town of its own
//! ([`unique_id`]), so the cases run in parallel and against a server that
//! already holds data.
//!
//! This crate holds the shared helpers: a small blocking client ([`call`],
//! [`Reply`]), token minting ([`tokens`]: admin, town, container,
//! read-only, expired, unknown-key and forged tokens), an agent's
//! event log ([`AgentLog`]), error-shape assertions ([`assert_error`]), raw
//! HTTP for requests an HTTP library would tidy up ([`raw`]), a
//! Server-Sent Events reader ([`sse`]) and a seeded HTTP fuzz ([`fuzz`]).
//! Every response those helpers receive is checked against the server's
//! `/openapi.json` ([`openapi`]).
#![allow(
    clippy::expect_used,
    reason = "a conformance helper fails loudly, naming what broke"
)]
#![allow(
    clippy::panic,
    reason = "a conformance helper fails loudly, naming what broke"
)]

mod agent_log;
pub mod fuzz;
pub mod matrix;
pub mod openapi;
pub mod raw;
pub mod snapshot;
pub mod sse;
pub mod tokens;
pub mod town;
pub mod workspace;

use std::hash::{BuildHasher, RandomState};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use agent_log::{AgentLog, LogState};
pub use serde_json::{Value, json};
use stasis_api::auth::{KeyRing, KeySettings};
pub use tokens::{admin_token, foreign_token, town_token};

/// The server's defaults, as `docs/http-api.md` states them.
pub mod limits {
    /// Events kept per agent.
    pub const RETENTION: u64 = 10_000;
    /// Events a read returns without `limit`.
    pub const READ_DEFAULT: u64 = 1_000;
    /// The largest `limit` a read accepts.
    pub const READ_MAX: u64 = 10_000;
    /// An event's size (data JSON text + type + session id) may reach this, not pass it.
    pub const EVENT_BYTES: u64 = 1_048_576;
    /// Events in one append.
    pub const BATCH_EVENTS: u64 = 1_000;
    /// Bytes in one append body.
    pub const BATCH_BYTES: u64 = 4_194_304;
    /// Stamps remembered per producer.
    pub const PRODUCER_WINDOW: u64 = 1_000;
}

const HOW_TO_RUN: &str = "the conformance suite needs a running stasis server: \
    STASIS_URL=http://127.0.0.1:8787 STASIS_SECRET=<its secret> cargo test -p stasis-conformance \
    (or STASIS_KEYS and STASIS_SIGNING_KEY_ID as the server has them; start one with \
    `STASIS_SECRET=<secret> stasis serve --listen 127.0.0.1:8787 --data-dir <dir>`)";

/// Where the server is and the keys its tokens are minted from.
#[derive(Debug)]
pub struct Target {
    /// Base URL without a trailing slash, e.g. `http://127.0.0.1:8787`.
    pub base: String,
    /// The server's keys.
    pub keys: KeyRing,
}

/// The server under test, read once from `STASIS_URL` and the key settings
/// (`STASIS_SECRET`, `STASIS_KEYS`, `STASIS_SIGNING_KEY_ID`).
///
/// # Panics
/// When the URL or every key setting is unset: the suite is never skipped
/// silently.
pub fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let base = std::env::var("STASIS_URL")
            .unwrap_or_else(|_| panic!("STASIS_URL is not set; {HOW_TO_RUN}"));
        let var = |name: &str| std::env::var(name).ok();
        let (secret, keys, signing) = (
            var("STASIS_SECRET"),
            var("STASIS_KEYS"),
            var("STASIS_SIGNING_KEY_ID"),
        );
        let settings = KeySettings {
            secret: secret.as_deref(),
            keys: keys.as_deref(),
            signing_key_id: signing.as_deref(),
        };
        let keys = KeyRing::from_settings(&settings)
            .unwrap_or_else(|err| panic!("the key settings are refused: {err}"))
            .unwrap_or_else(|| panic!("no key is set; {HOW_TO_RUN}"));
        Target {
            base: base.trim_end_matches('/').to_owned(),
            keys,
        }
    })
}

/// True when `STASIS_TARGET=edge`: the server is the worker under
/// `wrangler dev`, where a few cases differ for reasons outside stasis
/// (README, "Known limits", lists each).
pub fn on_edge() -> bool {
    std::env::var("STASIS_TARGET").is_ok_and(|t| t == "edge")
}

/// A fresh id `t-<label>-<16 hex digits>`, unique across runs and threads.
pub fn unique_id(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let random = RandomState::new().hash_one((nanos, count, std::process::id()));
    let label: String = label.chars().take(80).collect();
    format!("t-{label}-{random:016x}")
}

/// Checks `check` until it passes, every 50 ms, for at most 10 s, then
/// fails with its last complaint: for what the contract lets happen just
/// after an answer, such as the collection of chunks nothing names any
/// more (the host runs it after the answer, the edge before).
pub fn eventually(what: &str, mut check: impl FnMut() -> Result<(), String>) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match check() {
            Ok(()) => return,
            Err(complaint) if std::time::Instant::now() >= deadline => {
                panic!("{what}: still not so after 10 s: {complaint}")
            }
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
        }
    }
}

/// Milliseconds since the Unix epoch, to judge `created_at`.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn client() -> &'static ureq::Agent {
    static CLIENT: OnceLock<ureq::Agent> = OnceLock::new();
    CLIENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into()
    })
}

/// The request with its own whole-exchange limit, when it has one.
fn with_timeout<S: ureq::AsSendBody>(
    request: ureq::http::Request<S>,
    timeout: Option<Duration>,
) -> ureq::http::Request<S> {
    match timeout {
        Some(limit) => client()
            .configure_request(request)
            .timeout_global(Some(limit))
            .build(),
        None => request,
    }
}

/// Which credentials a request carries.
#[derive(Debug, Clone)]
enum Auth {
    Admin,
    Header(String),
    Nothing,
}

/// A request being built; [`Call::send`] runs it.
#[derive(Debug, Clone)]
#[must_use = "a call does nothing until sent"]
pub struct Call {
    method: String,
    path: String,
    auth: Auth,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    patient: bool,
}

/// Starts a request to `path` (which begins with `/`), carrying an admin token.
pub fn call(method: &str, path: &str) -> Call {
    Call {
        method: method.to_owned(),
        path: path.to_owned(),
        auth: Auth::Admin,
        headers: Vec::new(),
        body: None,
        patient: false,
    }
}

/// How long a [`Call::patient`] request may take: the suite's large
/// exchanges move hundreds of megabytes through `wrangler dev` on a loaded
/// 2-core machine, and they test correctness, not speed.
const PATIENT_TIMEOUT: Duration = Duration::from_secs(600);

impl Call {
    /// Sends `token` as a bearer token instead of the admin token.
    pub fn token(mut self, token: &str) -> Self {
        self.auth = Auth::Header(format!("Bearer {token}"));
        self
    }

    /// Sends this exact `Authorization` header.
    pub fn authorization(mut self, value: &str) -> Self {
        self.auth = Auth::Header(value.to_owned());
        self
    }

    /// Sends no `Authorization` header.
    pub fn no_token(mut self) -> Self {
        self.auth = Auth::Nothing;
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `value` as the body with `Content-Type: application/json`.
    pub fn json(self, value: &Value) -> Self {
        self.header("Content-Type", "application/json")
            .body(value.to_string())
    }

    /// Waits up to ten minutes for the whole exchange, not two.
    pub fn patient(mut self) -> Self {
        self.patient = true;
        self
    }

    /// Sends these bytes as the body, adding no `Content-Type`.
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.body = Some(bytes.into());
        self
    }

    /// Runs the request; any status comes back as a [`Reply`].
    ///
    /// # Panics
    /// When the server cannot be reached or the exchange breaks off.
    pub fn send(self) -> Reply {
        let url = format!("{}{}", target().base, self.path);
        let mut builder = ureq::http::Request::builder()
            .method(self.method.as_str())
            .uri(&url);
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        match &self.auth {
            Auth::Admin => {
                builder = builder.header("Authorization", format!("Bearer {}", admin_token()))
            }
            Auth::Header(value) => builder = builder.header("Authorization", value),
            Auth::Nothing => {}
        }
        let timeout = self.patient.then_some(PATIENT_TIMEOUT);
        let sent = match self.body {
            Some(body) => client().run(with_timeout(
                builder.body(body).expect("request parts are valid"),
                timeout,
            )),
            None => client().run(with_timeout(
                builder.body(()).expect("request parts are valid"),
                timeout,
            )),
        };
        let response = sent.unwrap_or_else(|e| panic!("{} {url} failed: {e}", self.method));
        let reply = Reply::from_response(response);
        openapi::check(&self.method, &self.path, &reply);
        reply
    }
}

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    fn from_response(mut response: ureq::http::Response<ureq::Body>) -> Reply {
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_ascii_lowercase(), value)
            })
            .collect();
        let body = response
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_vec()
            .expect("the response body reads to its end");
        Reply {
            status,
            headers,
            body,
        }
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text, for failure messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    /// When the body is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "expected a JSON body ({e}), got {} {:?}",
                self.status,
                self.text()
            )
        })
    }

    /// Asserts status `status` and returns the JSON body.
    pub fn expect_json(&self, status: u16) -> Value {
        assert_eq!(
            self.status,
            status,
            "unexpected status; body: {}",
            self.text()
        );
        self.json()
    }

    /// Asserts 200 and returns the JSON body.
    pub fn ok(&self) -> Value {
        self.expect_json(200)
    }
}

/// Asserts `reply` is the documented error: `status`, a JSON body
/// `{"error": {"code": code, "message": "...", ...}}`. Returns the `error`
/// object so a case can check its extra fields (`limit`, `first_seq`, ...).
pub fn assert_error(reply: &Reply, status: u16, code: &str) -> serde_json::Map<String, Value> {
    assert_eq!(
        reply.status,
        status,
        "expected {status} {code}, got {} with body {:?}",
        reply.status,
        reply.text()
    );
    let content_type = reply.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "an error body is JSON; Content-Type was {content_type:?}"
    );
    let body = reply.json();
    let error = body
        .get("error")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("an error body is {{\"error\": {{...}}}}, got {body}"));
    assert_eq!(
        error.get("code"),
        Some(&json!(code)),
        "error code in {body}"
    );
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(!message.is_empty(), "an error carries a message: {body}");
    error.clone()
}

/// Asserts `reply` is a 405 whose `Allow` header and `allowed` field list
/// every method in `methods`.
pub fn assert_not_allowed(reply: &Reply, methods: &[&str]) {
    let error = assert_error(reply, 405, "method_not_allowed");
    let allow = reply
        .header("allow")
        .unwrap_or_else(|| panic!("a 405 carries an Allow header: {:?}", reply.headers))
        .to_ascii_uppercase();
    let allowed = error
        .get("allowed")
        .unwrap_or_else(|| panic!("a 405 error carries `allowed`: {error:?}"))
        .to_string()
        .to_ascii_uppercase();
    for method in methods {
        let listed = |text: &str| {
            text.split(|c: char| !c.is_ascii_alphabetic())
                .any(|word| word == *method)
        };
        assert!(listed(&allow), "Allow {allow:?} should list {method}");
        assert!(listed(&allowed), "allowed {allowed} should list {method}");
    }
}

/// Asserts the error's `message` mentions `word` (e.g. the refused field).
pub fn assert_message_names(error: &serde_json::Map<String, Value>, word: &str) {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(
        message.contains(word),
        "the message should name {word:?}: {message:?}"
    );
}

/// A numeric field of a JSON object, failing loudly when absent.
pub fn num(value: &Value, field: &str) -> u64 {
    value
        .get(field)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("expected a non-negative integer {field:?} in {value}"))
}

/// The `seq`s of a read page, in order.
pub fn seqs(page: &Value) -> Vec<u64> {
    events(page).iter().map(|e| num(e, "seq")).collect()
}

/// The `events` array of a read page.
pub fn events(page: &Value) -> Vec<Value> {
    page.get("events")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("a read page has an events array: {page}"))
        .clone()
}

/// `n` events of type `kind`, each with `data: {"i": index}`.
pub fn batch(kind: &str, n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"type": kind, "data": {"i": i}}))
            .collect(),
    )
}
