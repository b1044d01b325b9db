//! The HTTP side: one `ureq` agent, the bearer token (kept alive by [`credentials`]), error
//! decoding and the retry loop.

pub mod credentials;
mod single;

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use ureq::http::Response;
use ureq::{Body, RequestBuilder};

use credentials::Credentials;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::retry::{self, Attempt, RetryNotice, RetryPolicy};

/// Largest JSON answer read (heartbeats carry dispatches with whole conversations).
const JSON_LIMIT: u64 = 64 * 1024 * 1024;
/// Largest error body read to build a message.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

type RetryHook = Arc<dyn Fn(&RetryNotice<'_>) + Send + Sync>;

/// A connection to one stasis server: shareable across threads, reusing connections.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    config: Config,
    policy: RetryPolicy,
    on_retry: Option<RetryHook>,
    credentials: Arc<Credentials>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("config", &self.config)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `config` with the default [`RetryPolicy`]. Connecting times out after 10 s;
    /// a transfer that stalls (no byte read or written) for 60 s is abandoned and retried.
    pub fn new(config: Config) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(Duration::from_secs(120)))
            .timeout_per_read(Some(Duration::from_secs(60)))
            .timeout_per_write(Some(Duration::from_secs(60)))
            .user_agent(concat!("stasis-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let credentials = Arc::new(Credentials::new(config.token().map(str::to_owned)));
        Client {
            agent,
            config,
            policy: RetryPolicy::default(),
            on_retry: None,
            credentials,
        }
    }

    /// Uses `policy` for every retried operation.
    #[must_use]
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Calls `hook` before each retry (the CLI logs them on stderr).
    #[must_use]
    pub fn on_retry(mut self, hook: impl Fn(&RetryNotice<'_>) + Send + Sync + 'static) -> Self {
        self.on_retry = Some(Arc::new(hook));
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    pub(crate) fn agent(&self) -> &ureq::Agent {
        &self.agent
    }

    pub(crate) fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Adds the token (refreshed first when due; see [`credentials`]), and a total
    /// timeout ending at `deadline` when given. Fails (final) only when stasis refused to
    /// refresh the token because this container is fenced.
    pub(crate) fn prepare<B>(
        &self,
        builder: RequestBuilder<B>,
        deadline: Option<Instant>,
    ) -> Result<RequestBuilder<B>, Attempt> {
        let builder = match self
            .credentials
            .authorization(self)
            .map_err(Attempt::fail)?
        {
            Some(value) => builder.header("Authorization", value),
            None => builder,
        };
        Ok(match deadline {
            Some(deadline) => builder
                .config()
                .timeout_global(Some(deadline.saturating_duration_since(Instant::now())))
                .build(),
            None => builder,
        })
    }

    /// Tells the retry hook about a retry.
    pub(crate) fn notify_retry(&self, notice: &RetryNotice<'_>) {
        if let Some(hook) = &self.on_retry {
            hook(notice);
        }
    }

    /// Runs `op` under the client's retry policy (and `deadline`); a deadline already past
    /// is [`Error::OutOfTime`] without an attempt. An attempt refused with 401 `expired` is
    /// made once more at once when a fresher token could be had.
    pub(crate) fn retrying<T>(
        &self,
        what: &str,
        deadline: Option<Instant>,
        mut op: impl FnMut() -> Result<T, Attempt>,
    ) -> Result<T> {
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            return Err(Error::OutOfTime {
                what: what.to_owned(),
            });
        }
        let mut recovered = false;
        let attempt = || match op() {
            Err(Attempt::Fail(error))
                if !recovered
                    && credentials::is_expired(&error)
                    && self.credentials.recover_expired(self) =>
            {
                recovered = true;
                op()
            }
            other => other,
        };
        retry::run(
            &self.policy,
            deadline,
            what,
            &|n| self.notify_retry(n),
            attempt,
        )
    }

    /// `GET path`, retried, answering the JSON body of a 2xx.
    pub fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let what = format!("GET {path}");
        let bytes = self.retrying(&what, deadline, || {
            let request = self.prepare(self.agent.get(self.config.url(path)), deadline)?;
            let response = request.call().map_err(|e| transport(&what, e))?;
            read_body(&what, check_status(&what, response)?)
        })?;
        parse_json(&what, &bytes)
    }

    /// `POST path` with a JSON body, retried, answering the JSON body of a 2xx. Only for
    /// requests the server treats as idempotent.
    pub fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let what = format!("POST {path}");
        let bytes = self.post(path, body, deadline)?;
        parse_json(&what, &bytes)
    }

    /// `POST path` with a JSON body, retried, answering the raw body of a 2xx (which may be
    /// empty). Only for requests the server treats as idempotent.
    pub fn post(
        &self,
        path: &str,
        body: &impl Serialize,
        deadline: Option<Instant>,
    ) -> Result<Vec<u8>> {
        self.send_json("POST", path, body, None, deadline)
    }

    /// `POST path` with a JSON body and an `Idempotency-Key` that every attempt repeats, so
    /// that a retry of a request the server would otherwise apply twice (a heartbeat that
    /// releases dispatches, a Mayor message) has the first attempt's effect only.
    pub fn post_json_once<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        idempotency_key: &str,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let bytes = self.send_json("POST", path, body, Some(idempotency_key), deadline)?;
        parse_json(&format!("POST {path}"), &bytes)
    }

    /// `PUT path` with a JSON body, retried, answering the JSON body of a 2xx.
    pub fn put_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let bytes = self.send_json("PUT", path, body, None, deadline)?;
        parse_json(&format!("PUT {path}"), &bytes)
    }

    /// `method path` with a JSON body, retried, answering the raw body of a 2xx.
    fn send_json(
        &self,
        method: &str,
        path: &str,
        body: &impl Serialize,
        idempotency_key: Option<&str>,
        deadline: Option<Instant>,
    ) -> Result<Vec<u8>> {
        let what = format!("{method} {path}");
        let bytes = serde_json::to_vec(body).map_err(|e| Error::Protocol {
            what: what.clone(),
            detail: format!("the request body does not encode: {e}"),
        })?;
        self.retrying(&what, deadline, || {
            let url = self.config.url(path);
            let builder = if method == "PUT" {
                self.agent.put(url)
            } else {
                self.agent.post(url)
            };
            let mut request = self
                .prepare(builder, deadline)?
                .header("Content-Type", "application/json");
            if let Some(key) = idempotency_key {
                request = request.header("Idempotency-Key", key);
            }
            let response = request.send(&bytes[..]).map_err(|e| transport(&what, e))?;
            read_body(&what, check_status(&what, response)?)
        })
    }
}

/// Classifies a failed exchange: connection and timeout failures are retried, the rest
/// (a malformed URL, TLS refusal, a body over its limit) are not.
pub(crate) fn transport(what: &str, error: ureq::Error) -> Attempt {
    let retry = matches!(
        error,
        ureq::Error::Io(_)
            | ureq::Error::Timeout(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
            | ureq::Error::Protocol(_)
            | ureq::Error::BodyStalled
    );
    let error = Error::Transport {
        what: what.to_owned(),
        source: error,
    };
    if retry {
        Attempt::retry(error, None)
    } else {
        Attempt::fail(error)
    }
}

/// Classifies an I/O error met while streaming a body (a broken connection): retried.
pub(crate) fn broken_stream(what: &str, error: std::io::Error) -> Attempt {
    let error = Error::Transport {
        what: what.to_owned(),
        source: ureq::Error::Io(error),
    };
    Attempt::retry(error, None)
}

/// Passes a 2xx through; turns any other status into an [`Error::Api`] from its body,
/// retried when [`retry::is_retryable_status`] says so.
pub(crate) fn check_status(
    what: &str,
    response: Response<Body>,
) -> Result<Response<Body>, Attempt> {
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    Err(refusal(what, response))
}

/// The [`Attempt`] for a non-2xx answer.
pub(crate) fn refusal(what: &str, response: Response<Body>) -> Attempt {
    let status = response.status().as_u16();
    let header_wait = header(&response, "retry-after").and_then(retry::parse_retry_after);
    let error = api_error(what, response);
    let body_wait = match &error {
        Error::Api {
            detail: Some(detail),
            ..
        } => detail
            .get("retry_after")
            .and_then(serde_json::Value::as_u64)
            .map(Duration::from_secs),
        _ => None,
    };
    if retry::is_retryable_status(status) && !error.is_permanent() {
        Attempt::retry(error, header_wait.or(body_wait))
    } else {
        Attempt::fail(error)
    }
}

/// Decodes `{"error": {"code", "message", ...}}`; a body that is not such JSON becomes
/// `http_<status>` with the body's start as the message.
pub(crate) fn api_error(what: &str, mut response: Response<Body>) -> Error {
    let status = response.status().as_u16();
    let mut bytes = Vec::new();
    // A body that cannot be read still leaves the status to report.
    let _ = response
        .body_mut()
        .as_reader()
        .take(ERROR_BODY_LIMIT)
        .read_to_end(&mut bytes);
    let parsed: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let detail = parsed.and_then(|v| v.get("error").cloned());
    let field = |name: &str| {
        detail
            .as_ref()
            .and_then(|d| d.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let code = field("code").unwrap_or_else(|| format!("http_{status}"));
    let message = field("message").unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&bytes);
        let text: String = text.trim().chars().take(200).collect();
        if text.is_empty() {
            response
                .status()
                .canonical_reason()
                .unwrap_or("no message")
                .to_owned()
        } else {
            text
        }
    });
    Error::Api {
        what: what.to_owned(),
        status,
        code,
        message,
        detail,
    }
}

/// Reads a whole body (up to 64 MiB); a broken connection is retried.
pub(crate) fn read_body(what: &str, mut response: Response<Body>) -> Result<Vec<u8>, Attempt> {
    let mut bytes = Vec::new();
    response
        .body_mut()
        .with_config()
        .limit(JSON_LIMIT)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| broken_stream(what, e))?;
    Ok(bytes)
}

/// Parses a JSON body; JSON that does not fit the contract is not worth a retry.
pub(crate) fn parse_json<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Protocol {
        what: what.to_owned(),
        detail: format!("the JSON body does not have the expected shape: {e}"),
    })
}

/// Reads and parses a JSON body inside a retried attempt.
pub(crate) fn read_json<T: DeserializeOwned>(
    what: &str,
    response: Response<Body>,
) -> Result<T, Attempt> {
    let bytes = read_body(what, response)?;
    parse_json(what, &bytes).map_err(Attempt::fail)
}

/// The first value of header `name`, when it is text.
pub(crate) fn header<'r>(response: &'r Response<Body>, name: &str) -> Option<&'r str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}
