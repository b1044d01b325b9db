//! The few stasis calls the story makes itself (the container's own work goes through the
//! `stasis-client` binary): town and agent setup, the agent's log, its snapshot's watermark,
//! its rebuilt conversation.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::time::Duration;

/// A stasis server and a token for one town.
#[derive(Clone)]
pub struct StasisApi {
    base: String,
    token: String,
    agent: ureq::Agent,
}

/// One agent of a container registry.
#[derive(Debug, Clone, Serialize)]
pub struct RegistryEntry<'a> {
    /// The agent's id.
    pub agent_id: &'a str,
    /// Its rig.
    pub rig_id: &'a str,
    /// Its role.
    pub role: &'a str,
    /// The runtime's session it runs.
    pub session_id: &'a str,
    /// Its runtime's port.
    pub port: u16,
}

#[derive(Serialize)]
struct Registry<'a> {
    container_id: &'a str,
    agents: &'a [RegistryEntry<'a>],
}

#[derive(Serialize)]
struct AgentRecord<'a> {
    role: &'a str,
}

/// One event of an agent's log, its `data` as stored.
#[derive(Debug, Clone, Deserialize)]
pub struct StoredEvent {
    /// Its place in the log.
    pub seq: u64,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: String,
    /// The session it names.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Its data's JSON text, byte for byte as the sidecar sent it.
    pub data: Box<RawValue>,
    /// When stasis stored it (epoch ms).
    #[serde(default)]
    pub created_at: Option<u64>,
}

impl StoredEvent {
    /// The string at `pointer` in its data (`/messageID`, `/info/role`, ...).
    pub fn text_at(&self, pointer: &str) -> Option<String> {
        let data: serde_json::Value = serde_json::from_str(self.data.get()).ok()?;
        data.pointer(pointer)?.as_str().map(str::to_owned)
    }
}

#[derive(Deserialize)]
struct Page {
    events: Vec<StoredEvent>,
    #[serde(default)]
    has_more: bool,
}

/// One turn of a rebuilt conversation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Turn {
    /// `user` or `assistant`.
    pub role: String,
    /// Its text parts and tool lines, joined with `"\n"`.
    pub content: String,
    /// It was cut off.
    #[serde(default)]
    pub unfinished: bool,
}

/// A conversation as stasis rebuilds it.
#[derive(Debug, Clone, Deserialize)]
pub struct Conversation {
    /// The turns kept, oldest first.
    pub turns: Vec<Turn>,
    /// Older turns left out.
    #[serde(default)]
    pub omitted_turns: u64,
}

/// A dispatch, as `boot` prints it.
#[derive(Debug, Clone, Deserialize)]
pub struct Dispatch {
    /// The agent.
    pub agent_id: String,
    /// Its rig.
    pub rig_id: String,
    /// Its role.
    pub role: String,
    /// The conversation it had.
    pub prior_conversation: Conversation,
    /// The prompt that resumes it.
    pub prompt: String,
    /// The newest seq of its log.
    pub event_watermark: u64,
}

impl StasisApi {
    /// The server at `base` (no trailing slash needed), with `token`.
    pub fn new(base: &str, token: &str) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Self {
            base: base.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            agent,
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The bearer token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// `PUT /api/towns/{town}/rigs/{rig}/agents/{agent}` `{role}`.
    ///
    /// # Errors
    ///
    /// On a transport error or a status other than 2xx.
    pub fn put_agent(&self, town: &str, rig: &str, agent: &str, role: &str) -> Result<()> {
        let path = format!("/api/towns/{town}/rigs/{rig}/agents/{agent}");
        self.send("PUT", &path, &AgentRecord { role }).map(drop)
    }

    /// `PUT /api/towns/{town}/container-registry`.
    ///
    /// # Errors
    ///
    /// As [`StasisApi::put_agent`].
    pub fn put_registry(
        &self,
        town: &str,
        container_id: &str,
        agents: &[RegistryEntry<'_>],
    ) -> Result<()> {
        let path = format!("/api/towns/{town}/container-registry");
        self.send(
            "PUT",
            &path,
            &Registry {
                container_id,
                agents,
            },
        )
        .map(drop)
    }

    /// `PUT {agent_path}/history/pins/{pin}` at `seq`: the versions that point resolves to are
    /// kept until the pin goes, whatever the retention policy.
    ///
    /// # Errors
    ///
    /// As [`StasisApi::put_agent`].
    pub fn pin(&self, agent_path: &str, pin: &str, seq: u64) -> Result<()> {
        let path = format!("{agent_path}/history/pins/{pin}");
        self.send("PUT", &path, &serde_json::json!({ "seq": seq }))
            .map(drop)
    }

    /// `POST path` with a JSON body: the answer's body.
    ///
    /// # Errors
    ///
    /// As [`StasisApi::put_agent`].
    pub fn post_json(&self, path: &str, body: &impl Serialize) -> Result<String> {
        self.send("POST", path, body)
    }

    /// `POST /api/towns/{town}/mayor/message {text}`: the answer's body.
    ///
    /// # Errors
    ///
    /// As [`StasisApi::put_agent`].
    pub fn post_mayor_message(&self, town: &str, text: &str) -> Result<String> {
        let path = format!("/api/towns/{town}/mayor/message");
        self.send("POST", &path, &serde_json::json!({ "text": text }))
    }

    /// The agent's events after `after`, every page of them.
    ///
    /// # Errors
    ///
    /// On a transport error, a status other than 2xx, or another shape.
    pub fn events_after(&self, agent_path: &str, after: u64) -> Result<Vec<StoredEvent>> {
        let mut events: Vec<StoredEvent> = Vec::new();
        let mut cursor = after;
        loop {
            let path = format!("{agent_path}/events?after={cursor}&limit=1000");
            let page: Page = serde_json::from_str(&self.get(&path)?)
                .with_context(|| format!("GET {path}'s answer"))?;
            cursor = page.events.last().map_or(cursor, |e| e.seq);
            let more = page.has_more && !page.events.is_empty();
            events.extend(page.events);
            if !more {
                return Ok(events);
            }
        }
    }

    /// The event watermark of the agent's current snapshot (`HEAD /db-snapshot`'s
    /// `X-Stasis-Event-Seq`); `None` while it has none.
    ///
    /// # Errors
    ///
    /// On a transport error or a status other than 200 and 404.
    pub fn snapshot_watermark(&self, agent_path: &str) -> Result<Option<u64>> {
        let path = format!("{agent_path}/db-snapshot");
        let response = self
            .authorized(self.agent.head(format!("{}{path}", self.base)))
            .call()
            .with_context(|| format!("HEAD {path}"))?;
        match response.status().as_u16() {
            404 => Ok(None),
            200 => {
                let seq = response
                    .headers()
                    .get("X-Stasis-Event-Seq")
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.parse().ok());
                Ok(Some(seq.unwrap_or(0)))
            }
            status => bail!("HEAD {path}: {status}"),
        }
    }

    /// `GET {agent}/conversation` with the largest budget (1,000 turns, 1,000,000 tokens).
    ///
    /// # Errors
    ///
    /// On a transport error, a status other than 2xx, or another shape.
    pub fn conversation(&self, agent_path: &str) -> Result<Conversation> {
        let path = format!("{agent_path}/conversation?max_turns=1000&max_tokens=1000000");
        serde_json::from_str(&self.get(&path)?).with_context(|| format!("GET {path}'s answer"))
    }

    fn get(&self, path: &str) -> Result<String> {
        let request = self.authorized(self.agent.get(format!("{}{path}", self.base)));
        let response = request.call().with_context(|| format!("GET {path}"))?;
        read("GET", path, response)
    }

    fn send(&self, method: &str, path: &str, body: &impl Serialize) -> Result<String> {
        let json = serde_json::to_string(body)?;
        let url = format!("{}{path}", self.base);
        let request = match method {
            "PUT" => self.agent.put(url),
            _ => self.agent.post(url),
        };
        let response = self
            .authorized(request)
            .header("Content-Type", "application/json")
            .send(&json)
            .with_context(|| format!("{method} {path}"))?;
        read(method, path, response)
    }

    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        request.header("Authorization", format!("Bearer {}", self.token))
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
