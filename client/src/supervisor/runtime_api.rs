//! The few calls the supervisor makes to the runtime's own HTTP API (kilo serve; opencode ≥ 1.2
//! serves the same): its sessions, a prompt (the eviction's nudge), an abort (a turn past its
//! deadline, or still running at the end of the nudge window). Every call has a short timeout:
//! a runtime that hangs must not hang its supervisor.

use std::io::Read;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::error::{Error, Result};
use crate::ids::check_id;

/// The longest answer read (a session list).
const BODY_LIMIT: u64 = 16 * 1024 * 1024;

/// The runtime's API at one base URL.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeApi {
    base: String,
    agent: ureq::Agent,
}

#[derive(Debug, Deserialize)]
struct Session {
    id: String,
    #[serde(default)]
    time: SessionTime,
}

#[derive(Debug, Default, Deserialize)]
struct SessionTime {
    #[serde(default)]
    updated: Option<f64>,
}

impl RuntimeApi {
    /// The API at `base` (`http://127.0.0.1:PORT`).
    pub(crate) fn new(base: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(2)))
            .timeout_global(Some(Duration::from_secs(10)))
            .build()
            .into();
        RuntimeApi {
            base: base.trim_end_matches('/').to_owned(),
            agent,
        }
    }

    /// The session updated last (`GET /session`), when there is one.
    pub(crate) fn latest_session(&self) -> Result<Option<String>> {
        let what = format!("GET {}/session", self.base);
        let mut response = self
            .agent
            .get(format!("{}/session", self.base))
            .call()
            .map_err(|e| failure(&what, e.to_string()))?;
        if !response.status().is_success() {
            return Err(failure(&what, format!("answered {}", response.status())));
        }
        let mut bytes = Vec::new();
        response
            .body_mut()
            .with_config()
            .limit(BODY_LIMIT)
            .reader()
            .read_to_end(&mut bytes)
            .map_err(|e| failure(&what, e.to_string()))?;
        let sessions: Vec<Session> = serde_json::from_slice(&bytes)
            .map_err(|e| failure(&what, format!("unexpected JSON: {e}")))?;
        Ok(sessions
            .into_iter()
            .filter(|s| check_id("session", &s.id).is_ok())
            .max_by(|a, b| {
                let (a, b) = (a.time.updated.unwrap_or(0.0), b.time.updated.unwrap_or(0.0));
                a.total_cmp(&b)
            })
            .map(|s| s.id))
    }

    /// `POST /session/{id}/prompt_async` with one text part: the turn runs in the background.
    pub(crate) fn prompt(&self, session: &str, text: &str) -> Result<()> {
        check_id("session", session)?;
        let body = json!({ "parts": [{ "type": "text", "text": text }] });
        self.post(&format!("/session/{session}/prompt_async"), &body)
    }

    /// `POST /session/{id}/abort`: the turn in flight stops.
    pub(crate) fn abort(&self, session: &str) -> Result<()> {
        check_id("session", session)?;
        self.post(&format!("/session/{session}/abort"), &json!({}))
    }

    fn post(&self, path: &str, body: &serde_json::Value) -> Result<()> {
        let url = format!("{}{path}", self.base);
        let what = format!("POST {url}");
        let response = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map_err(|e| failure(&what, e.to_string()))?;
        if !response.status().is_success() {
            return Err(failure(&what, format!("answered {}", response.status())));
        }
        Ok(())
    }
}

fn failure(what: &str, detail: String) -> Error {
    Error::Runtime {
        what: what.to_owned(),
        detail,
    }
}
