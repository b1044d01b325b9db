//! The calls resuming needs from the agent runtime (`kilo serve`; opencode ≥ 1.2 serves the
//! same): its sessions and their messages, whether a session is busy, a new session, and a
//! prompt sent with a message id chosen here.
//!
//! Why the id is chosen here: kilo's `POST /session/{id}/prompt_async` takes an optional
//! `messageID` and stores the user message under it verbatim (it only checks the `msg`
//! prefix). Knowing the id before sending lets a retry after a crash ask kilo (or the log)
//! whether the message arrived, instead of sending it twice. kilo orders a session's messages
//! by id (its prompt loop answers the user message with the greatest id), so the id must sort
//! after every message the session holds: [`new_message_id`].

use std::collections::HashMap;
use std::io::Read;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::ids::check_id;

/// Largest JSON answer read from the runtime (a long session's messages).
const JSON_LIMIT: u64 = 256 * 1024 * 1024;
/// Base62, as kilo's ids use it.
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// The random tail of a kilo id (26 characters after the prefix, 12 of them hex).
const TAIL_LEN: usize = 14;

/// A session as `GET /session` lists it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct KiloSession {
    pub(crate) id: String,
    /// Set on a subagent's session.
    #[serde(default, rename = "parentID")]
    pub(crate) parent_id: Option<String>,
    #[serde(default)]
    pub(crate) time: SessionTime,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct SessionTime {
    #[serde(default)]
    pub(crate) updated: Option<f64>,
}

/// A message as `GET /session/{id}/message` gives it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct KiloMessage {
    pub(crate) info: MessageInfo,
    #[serde(default)]
    pub(crate) parts: Vec<KiloPart>,
}

/// A message's `info`: what resuming reads of it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct MessageInfo {
    pub(crate) id: String,
    pub(crate) role: String,
    #[serde(default)]
    pub(crate) time: MessageTime,
    #[serde(default)]
    pub(crate) finish: Option<String>,
    #[serde(default)]
    pub(crate) error: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct MessageTime {
    #[serde(default)]
    pub(crate) completed: Option<f64>,
}

/// One part of a message: only text parts matter here.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct KiloPart {
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) text: Option<String>,
    #[serde(default)]
    pub(crate) synthetic: Option<bool>,
    #[serde(default)]
    pub(crate) ignored: Option<bool>,
}

impl KiloMessage {
    /// The text of its text parts that were said (not synthetic or ignored), joined.
    pub(crate) fn text(&self) -> String {
        let said = self
            .parts
            .iter()
            .filter(|p| p.kind == "text" && p.synthetic != Some(true) && p.ignored != Some(true));
        said.filter_map(|p| p.text.as_deref())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A session's state in `GET /session/status`.
#[derive(Debug, Clone, Deserialize)]
struct SessionStatus {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize)]
struct Prompt<'a> {
    #[serde(rename = "messageID")]
    message_id: &'a str,
    parts: [TextPart<'a>; 1],
}

#[derive(Serialize)]
struct TextPart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Deserialize)]
struct Created {
    id: String,
}

/// The runtime at one base URL.
#[derive(Debug, Clone)]
pub(crate) struct Kilo {
    base: String,
    agent: ureq::Agent,
}

impl Kilo {
    /// The runtime at `url` (`http://host:port`).
    pub(crate) fn new(url: &str) -> Result<Self> {
        let base = url.trim().trim_end_matches('/');
        let valid = ["http://", "https://"]
            .iter()
            .any(|scheme| base.strip_prefix(scheme).is_some_and(|r| !r.is_empty()))
            && !base.contains(['?', '#', ' ']);
        if !valid {
            return Err(Error::Config(format!(
                "the runtime URL must be http(s)://host:port, got {url:?}"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Kilo {
            base: base.to_owned(),
            agent,
        })
    }

    /// `GET /session`, the agent's own sessions (no subagent's), most recently updated first.
    pub(crate) fn sessions(&self) -> Result<Vec<KiloSession>> {
        let mut sessions: Vec<KiloSession> = self.get_json("/session")?;
        sessions.retain(|s| s.parent_id.is_none());
        sessions.sort_by(|a, b| {
            let updated = |s: &KiloSession| s.time.updated.unwrap_or(0.0);
            updated(b).total_cmp(&updated(a))
        });
        Ok(sessions)
    }

    /// `GET /session/{id}/message`, in kilo's order.
    pub(crate) fn messages(&self, session: &str) -> Result<Vec<KiloMessage>> {
        check_id("session", session)?;
        self.get_json(&format!("/session/{session}/message"))
    }

    /// Whether `session` is running a turn now (`GET /session/status` names it busy or
    /// retrying; an idle session is left out of that map).
    pub(crate) fn is_busy(&self, session: &str) -> Result<bool> {
        let status: HashMap<String, SessionStatus> = self.get_json("/session/status")?;
        Ok(status.get(session).is_some_and(|s| s.kind != "idle"))
    }

    /// `POST /session {}`: a new session's id.
    pub(crate) fn create_session(&self) -> Result<String> {
        let created: Created = self.post_json("/session", &serde_json::Map::new())?;
        check_id("session", &created.id)?;
        Ok(created.id)
    }

    /// `POST /session/{id}/prompt_async {messageID, parts: [text]}`: kilo stores the user
    /// message under `message_id` and runs the turn in the background.
    pub(crate) fn prompt(&self, session: &str, message_id: &str, text: &str) -> Result<()> {
        check_id("session", session)?;
        let body = Prompt {
            message_id,
            parts: [TextPart { kind: "text", text }],
        };
        self.post_raw(&format!("/session/{session}/prompt_async"), &body)
            .map(drop)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T> {
        let url = self.url(path);
        let what = format!("GET {url}");
        let response = self
            .agent
            .get(&url)
            .call()
            .map_err(|e| runtime_error(&what, e.to_string()))?;
        parse(&what, &read(&what, response)?)
    }

    fn post_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T> {
        let what = format!("POST {}", self.url(path));
        parse(&what, &self.post_raw(path, body)?)
    }

    fn post_raw(&self, path: &str, body: &impl Serialize) -> Result<Vec<u8>> {
        let url = self.url(path);
        let what = format!("POST {url}");
        let json = serde_json::to_vec(body).map_err(|e| runtime_error(&what, e.to_string()))?;
        let response = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(&json[..])
            .map_err(|e| runtime_error(&what, e.to_string()))?;
        read(&what, response)
    }
}

fn read(what: &str, mut response: ureq::http::Response<ureq::Body>) -> Result<Vec<u8>> {
    let status = response.status();
    let mut bytes = Vec::new();
    response
        .body_mut()
        .with_config()
        .limit(JSON_LIMIT)
        .reader()
        .read_to_end(&mut bytes)
        .map_err(|e| runtime_error(what, e.to_string()))?;
    if !status.is_success() {
        let body: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
        return Err(runtime_error(what, format!("answered {status}: {body}")));
    }
    Ok(bytes)
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| runtime_error(what, format!("unexpected JSON: {e}")))
}

fn runtime_error(what: &str, detail: String) -> Error {
    Error::Runtime {
        what: what.to_owned(),
        detail,
    }
}

/// The ordering key of a kilo id: the 12 hex digits after `prefix_` (milliseconds × 4096
/// plus a counter), or `None` for an id of another shape.
pub(crate) fn id_order(id: &str) -> Option<u64> {
    let (_, rest) = id.split_once('_')?;
    let hex = rest.get(..12)?;
    u64::from_str_radix(hex, 16).ok()
}

/// A kilo message id (`msg_` + 12 hex digits + 14 base62 characters, as kilo mints them)
/// that sorts after every id in `existing` and after `now_ms`, its tail derived from `seed`
/// so that the same decision names the same id.
pub(crate) fn new_message_id<'a>(
    existing: impl IntoIterator<Item = &'a str>,
    now_ms: u64,
    seed: &str,
) -> String {
    // kilo keeps the low 48 bits of `ms * 4096 + counter`, and so does this.
    const MASK: u64 = 0xffff_ffff_ffff;
    let newest = existing.into_iter().filter_map(id_order).max();
    let at_now = now_ms.wrapping_mul(0x1000) & MASK;
    let order = match newest {
        Some(newest) if newest >= at_now => newest.wrapping_add(1) & MASK,
        _ => at_now,
    };
    let digest = Sha256::digest(seed.as_bytes());
    let tail: String = digest
        .iter()
        .take(TAIL_LEN)
        .map(|b| char::from(BASE62[usize::from(*b) % BASE62.len()]))
        .collect();
    format!("msg_{order:012x}{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_message_id_has_kilos_shape_and_sorts_after_the_session() {
        let existing = [
            "msg_0190aaaaaaaa1234567890ABCD",
            "msg_0190aaaaaab0zzzzzzzzzzzzzz",
        ];
        // A clock behind the session's newest id still sorts after it.
        let id = new_message_id(existing, 1, "seed");
        assert_eq!(id.len(), 30);
        assert!(id.starts_with("msg_"));
        assert!(existing.iter().all(|e| *e < id.as_str()), "{id}");
        assert_eq!(id_order(&id), Some(0x0190_aaaa_aab1));
        // A clock ahead: the id is the clock's.
        let later = new_message_id(existing, 0x0_190a_aaab, "seed");
        assert_eq!(id_order(&later), Some(0x0190_aaaa_b000));
        assert!(check_id("message", &id).is_ok());
    }

    #[test]
    fn the_same_seed_names_the_same_tail() {
        let a = new_message_id([], 5, "cut:msg_1");
        let b = new_message_id([], 5, "cut:msg_1");
        let c = new_message_id([], 5, "cut:msg_2");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a[16..].bytes().all(|b| b.is_ascii_alphanumeric()));
    }

    #[test]
    fn text_leaves_out_synthetic_ignored_and_other_parts() {
        let message: KiloMessage = serde_json::from_str(
            r#"{"info":{"id":"msg_1","role":"assistant"},"parts":[
                {"type":"step-start"},
                {"type":"text","text":"Hello"},
                {"type":"text","text":"note","synthetic":true},
                {"type":"text","text":""},
                {"type":"text","text":"world"}]}"#,
        )
        .expect("a message");
        assert_eq!(message.text(), "Hello\nworld");
    }
}
