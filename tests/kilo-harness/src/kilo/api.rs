//! Typed calls to kilo's HTTP API.

use super::messages::{KiloMessage, SessionInfo};
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// kilo's API at one base URL.
#[derive(Clone)]
pub struct KiloApi {
    base: String,
    agent: ureq::Agent,
}

#[derive(Serialize)]
struct Prompt<'a> {
    parts: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct Revert<'a> {
    #[serde(rename = "messageID")]
    message_id: &'a str,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

#[derive(Deserialize)]
struct Health {
    healthy: bool,
}

impl KiloApi {
    /// The API at `base` (`http://127.0.0.1:PORT`).
    pub fn new(base: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        Self {
            base: base.trim_end_matches('/').to_owned(),
            agent,
        }
    }

    /// `GET /global/health` says healthy.
    pub fn is_healthy(&self) -> bool {
        self.get("/global/health")
            .ok()
            .and_then(|body| serde_json::from_str::<Health>(&body).ok())
            .is_some_and(|health| health.healthy)
    }

    /// `POST /session` `{}`: a new session's id.
    ///
    /// # Errors
    ///
    /// On a transport error, a status other than 2xx, or an answer without
    /// an id.
    pub fn create_session(&self) -> Result<String> {
        let body = self.post("/session", "{}")?;
        let created: Created = serde_json::from_str(&body).context("POST /session's answer")?;
        Ok(created.id)
    }

    /// `POST /session/{id}/prompt_async` with one text part: the turn runs
    /// in the background.
    ///
    /// # Errors
    ///
    /// On a transport error or a status other than 2xx.
    pub fn prompt_async(&self, session: &str, text: &str) -> Result<()> {
        let prompt = serde_json::to_string(&Prompt {
            parts: [TextPart { kind: "text", text }],
        })?;
        self.post(&format!("/session/{session}/prompt_async"), &prompt)?;
        Ok(())
    }

    /// `POST /session/{id}/revert` `{messageID}`: the session goes back to
    /// before that message (kilo removes the reverted messages at the next
    /// prompt).
    ///
    /// # Errors
    ///
    /// On a transport error or a status other than 2xx.
    pub fn revert(&self, session: &str, message_id: &str) -> Result<()> {
        let body = serde_json::to_string(&Revert { message_id })?;
        self.post(&format!("/session/{session}/revert"), &body)?;
        Ok(())
    }

    /// `GET /session`.
    ///
    /// # Errors
    ///
    /// On a transport error, a status other than 2xx, or another shape.
    pub fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let body = self.get("/session")?;
        serde_json::from_str(&body).context("GET /session's answer")
    }

    /// `GET /session/{id}/message`, read.
    ///
    /// # Errors
    ///
    /// On a transport error, a status other than 2xx, or another shape.
    pub fn messages(&self, session: &str) -> Result<Vec<KiloMessage>> {
        let body = self.messages_raw(session)?;
        serde_json::from_str(&body).context("GET /session/{id}/message's answer")
    }

    /// `GET /session/{id}/message`, as kilo sent it.
    ///
    /// # Errors
    ///
    /// On a transport error or a status other than 2xx.
    pub fn messages_raw(&self, session: &str) -> Result<String> {
        self.get(&format!("/session/{session}/message"))
    }

    fn get(&self, path: &str) -> Result<String> {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .call()
            .with_context(|| format!("GET {path}"))?;
        read("GET", path, response)
    }

    fn post(&self, path: &str, json: &str) -> Result<String> {
        let response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Content-Type", "application/json")
            .send(json)
            .with_context(|| format!("POST {path}"))?;
        read("POST", path, response)
    }
}

fn read(method: &str, path: &str, response: http::Response<ureq::Body>) -> Result<String> {
    let status = response.status();
    let body = response
        .into_body()
        .read_to_string()
        .with_context(|| format!("{method} {path}: reading the answer"))?;
    if !status.is_success() {
        bail!("{method} {path}: {status}: {body}");
    }
    Ok(body)
}
