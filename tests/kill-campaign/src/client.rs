//! The few HTTP calls a campaign makes, with an admin token. Any status
//! comes back as a value; only a broken exchange is an error.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};
use stasis_api::auth::{DEFAULT_ADMIN_TTL, Grant, KeyRing, Scope};

/// A snapshot as `GET /db-snapshot` served it.
#[derive(Debug)]
pub struct Served {
    /// The status.
    pub status: u16,
    /// `X-Stasis-Sha256`.
    pub sha256: Option<String>,
    /// `X-Stasis-Snapshot-Version`.
    pub version: Option<u64>,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// A client of one host.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    auth: String,
    agent: ureq::Agent,
}

impl Client {
    /// A client of the host at `base` whose secret is `secret`.
    ///
    /// # Errors
    ///
    /// When no token can be minted from `secret` (under 16 characters).
    pub fn new(base: &str, secret: &str) -> Result<Client, String> {
        let token = admin_token(secret)?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Client {
            base: base.to_owned(),
            auth: format!("Bearer {token}"),
            agent,
        })
    }

    /// True when `GET /healthz` answers 200.
    pub fn healthy(&self) -> bool {
        self.agent
            .get(format!("{}/healthz", self.base))
            .call()
            .is_ok_and(|r| r.status() == 200)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<(u16, Value), String> {
        let response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .send_json(body)
            .map_err(|e| format!("POST {path}: {e}"))?;
        json_reply(path, response)
    }

    /// `GET path`, its JSON body.
    pub fn get(&self, path: &str) -> Result<(u16, Value), String> {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .call()
            .map_err(|e| format!("GET {path}: {e}"))?;
        json_reply(path, response)
    }

    /// `PUT path` with snapshot bytes and their sha256.
    pub fn put_snapshot(
        &self,
        path: &str,
        bytes: &[u8],
        sha256: &str,
    ) -> Result<(u16, Value), String> {
        let response = self
            .agent
            .put(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .header("Content-Type", "application/octet-stream")
            .header("X-Stasis-Sha256", sha256)
            .send(bytes)
            .map_err(|e| format!("PUT {path}: {e}"))?;
        json_reply(path, response)
    }

    /// `PUT path` with bytes (a chunk).
    pub fn put_bytes(&self, path: &str, bytes: &[u8]) -> Result<(u16, Value), String> {
        let response = self
            .agent
            .put(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .header("Content-Type", "application/octet-stream")
            .send(bytes)
            .map_err(|e| format!("PUT {path}: {e}"))?;
        json_reply(path, response)
    }

    /// `PUT path` with a JSON body.
    pub fn put_json(&self, path: &str, body: &Value) -> Result<(u16, Value), String> {
        let response = self
            .agent
            .put(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .send_json(body)
            .map_err(|e| format!("PUT {path}: {e}"))?;
        json_reply(path, response)
    }

    /// `GET path` of a snapshot.
    pub fn get_snapshot(&self, path: &str) -> Result<Served, String> {
        let mut response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", &self.auth)
            .call()
            .map_err(|e| format!("GET {path}: {e}"))?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let sha256 = header("x-stasis-sha256");
        let version = header("x-stasis-snapshot-version").and_then(|v| v.parse().ok());
        let status = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_vec()
            .map_err(|e| format!("GET {path}: reading the body: {e}"))?;
        Ok(Served {
            status,
            sha256,
            version,
            bytes,
        })
    }
}

fn json_reply(
    path: &str,
    mut response: ureq::http::Response<ureq::Body>,
) -> Result<(u16, Value), String> {
    let status = response.status().as_u16();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .map_err(|e| format!("{path}: reading the body: {e}"))?;
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok((status, value))
}

/// An admin token from the host's `STASIS_SECRET`, valid from now for
/// [`DEFAULT_ADMIN_TTL`].
fn admin_token(secret: &str) -> Result<String, String> {
    let keys = KeyRing::single(secret).map_err(|e| format!("the campaign's secret: {e}"))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    keys.mint(&Grant::new(Scope::Admin), now, DEFAULT_ADMIN_TTL)
        .map_err(|e| format!("minting an admin token: {e}"))
}

/// The lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
