//! Plain JSON requests whose status the demo checks itself (the client
//! library answers only a 2xx's body, and has no `PUT` of JSON).

use anyhow::{Context, bail};
use serde_json::Value;
use std::time::Duration;
use ureq::http::{Method, Request};

/// The largest answer read (a dispatch carries a whole conversation).
const ANSWER_LIMIT: u64 = 64 * 1024 * 1024;

/// A server and the token sent to it.
pub struct Http {
    agent: ureq::Agent,
    base_url: String,
    authorization: Option<String>,
}

/// A status and its JSON body (`null` when empty).
pub struct Answer {
    /// The request, to name it in errors.
    what: String,
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Value,
}

impl Http {
    /// Requests to `base_url` (no trailing slash), with `token` as a bearer.
    pub fn new(base_url: &str, token: Option<&str>) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Self {
            agent,
            base_url: base_url.to_owned(),
            authorization: token.map(|t| format!("Bearer {t}")),
        }
    }

    /// `GET path`, expecting 200.
    pub fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(Method::GET, path, None)?.expect(200)
    }

    /// `PUT path` with a JSON body.
    pub fn put(&self, path: &str, body: &Value) -> anyhow::Result<Answer> {
        self.send(Method::PUT, path, Some(body))
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> anyhow::Result<Answer> {
        self.send(Method::POST, path, Some(body))
    }

    fn send(&self, method: Method, path: &str, body: Option<&Value>) -> anyhow::Result<Answer> {
        let what = format!("{method} {path}");
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base_url))
            .header("accept", "application/json");
        if let Some(value) = &self.authorization {
            request = request.header("authorization", value);
        }
        let payload = match body {
            Some(json) => {
                request = request.header("content-type", "application/json");
                serde_json::to_vec(json)?
            }
            None => Vec::new(),
        };
        let mut response = self
            .agent
            .run(request.body(payload)?)
            .with_context(|| format!("{what}: no answer"))?;
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(ANSWER_LIMIT)
            .read_to_vec()
            .with_context(|| format!("{what}: reading the answer"))?;
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&text).with_context(|| {
                format!(
                    "{what}: the answer ({status}) is not JSON: {}",
                    String::from_utf8_lossy(&text)
                )
            })?
        };
        Ok(Answer { what, status, body })
    }
}

impl Answer {
    /// The body, when the status is `status`; else an error quoting both.
    pub fn expect(self, status: u16) -> anyhow::Result<Value> {
        if self.status != status {
            bail!(
                "{}: expected HTTP {status}, got {}: {}",
                self.what,
                self.status,
                self.body
            );
        }
        Ok(self.body)
    }
}
