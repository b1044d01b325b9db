//! The agent runtime's own HTTP API (`kilo serve`; opencode ≥ 1.2 serves the same): its
//! health, its event stream, and the sessions and messages a resync reads back.

use std::io::Read;
use std::thread;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::ids::check_id;

/// Largest JSON answer read from the runtime (a long session's messages).
const JSON_LIMIT: u64 = 256 * 1024 * 1024;
/// The longest one health probe may take. kilo never answers a request that reaches it just as
/// its port starts accepting: a probe given the whole start timeout would spend it waiting on
/// that one request, so each probe is short and the next one goes out.
const HEALTH_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// A session as `GET /session` lists it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SessionSummary {
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) time: SessionTime,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct SessionTime {
    #[serde(default)]
    pub(crate) updated: Option<f64>,
}

/// A message as `GET /session/{id}/message` gives it: `{info, parts}`, kept verbatim.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageWithParts {
    pub(crate) info: Box<RawValue>,
    #[serde(default)]
    pub(crate) parts: Vec<Box<RawValue>>,
}

/// The runtime at one base URL.
#[derive(Debug, Clone)]
pub(crate) struct Runtime {
    base: String,
    agent: ureq::Agent,
}

impl Runtime {
    /// The runtime at `url` (`http://host:port`, no query).
    pub(crate) fn new(url: &str) -> Result<Self> {
        let base = url.trim().trim_end_matches('/');
        let valid = ["http://", "https://"].iter().any(|scheme| {
            base.strip_prefix(scheme)
                .is_some_and(|rest| !rest.is_empty())
        }) && !base.contains(['?', '#', ' ']);
        if !valid {
            return Err(Error::Config(format!(
                "the runtime URL must be http(s)://host:port, got {url:?}"
            )));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_recv_response(Some(Duration::from_secs(30)))
            .timeout_recv_body(Some(Duration::from_secs(60)))
            .build()
            .into();
        Ok(Runtime {
            base: base.to_owned(),
            agent,
        })
    }

    /// The base URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Polls `GET /global/health` until it answers 2xx or `timeout` passes, each probe bounded
    /// by [`HEALTH_PROBE_TIMEOUT`] (and by what is left of `timeout`).
    pub(crate) fn wait_healthy(&self, timeout: Duration) -> Result<()> {
        let started = Instant::now();
        let what = format!("GET {}", self.url("/global/health"));
        loop {
            let left = timeout.saturating_sub(started.elapsed());
            let probe = HEALTH_PROBE_TIMEOUT
                .min(left)
                .max(Duration::from_millis(50));
            let request = self
                .agent
                .get(self.url("/global/health"))
                .config()
                .timeout_global(Some(probe))
                .build();
            let detail = match request.call() {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response) => format!("answered {}", response.status()),
                Err(e) => e.to_string(),
            };
            if started.elapsed() >= timeout {
                return Err(Error::Runtime {
                    what,
                    detail: format!("no healthy answer within {timeout:?} (last: {detail})"),
                });
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Opens `GET /event`; reading its body fails after `idle` without a byte.
    pub(crate) fn open_events(&self, idle: Duration) -> Result<impl Read + use<>> {
        let url = self.url("/event");
        let what = format!("GET {url}");
        let response = self
            .agent
            .get(&url)
            .config()
            .timeout_recv_body(None)
            .timeout_per_read(Some(idle))
            .build()
            .header("Accept", "text/event-stream")
            .call()
            .map_err(|e| runtime_error(&what, e.to_string()))?;
        if !response.status().is_success() {
            let detail = format!("answered {}", response.status());
            return Err(runtime_error(&what, detail));
        }
        Ok(response.into_body().into_reader())
    }

    /// `GET /session`.
    pub(crate) fn sessions(&self) -> Result<Vec<SessionSummary>> {
        self.get_json("/session")
    }

    /// `GET /session/{id}/message` (an id stasis would refuse is not asked for).
    pub(crate) fn messages(&self, session_id: &str) -> Result<Vec<MessageWithParts>> {
        check_id("session", session_id)?;
        self.get_json(&format!("/session/{session_id}/message"))
    }

    fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        let url = self.url(path);
        let what = format!("GET {url}");
        let mut response = self
            .agent
            .get(&url)
            .call()
            .map_err(|e| runtime_error(&what, e.to_string()))?;
        if !response.status().is_success() {
            let detail = format!("answered {}", response.status());
            return Err(runtime_error(&what, detail));
        }
        let mut bytes = Vec::new();
        response
            .body_mut()
            .with_config()
            .limit(JSON_LIMIT)
            .reader()
            .read_to_end(&mut bytes)
            .map_err(|e| runtime_error(&what, e.to_string()))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| runtime_error(&what, format!("unexpected JSON: {e}")))
    }
}

fn runtime_error(what: &str, detail: String) -> Error {
    Error::Runtime {
        what: what.to_owned(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_urls_need_a_scheme_and_a_host() {
        assert!(Runtime::new("http://127.0.0.1:4096/").is_ok());
        for bad in ["127.0.0.1:4096", "http://", "http://x/?a", "ftp://x"] {
            assert!(Runtime::new(bad).is_err(), "{bad}");
        }
    }

    /// A runtime whose first connection is accepted and never answered (kilo at the moment its
    /// port opens), and which answers every later request: healthy well within the start
    /// timeout, not after the first request's own timeout.
    #[test]
    #[allow(clippy::expect_used, reason = "a test fails loudly")]
    fn a_probe_that_gets_no_answer_is_retried_within_the_start_timeout() {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = listener.local_addr().expect("its address").port();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for (index, stream) in listener.incoming().take(20).enumerate() {
                let Ok(mut stream) = stream else { continue };
                if index == 0 {
                    held.push(stream);
                    continue;
                }
                let mut request = [0u8; 1024];
                let _ = std::io::Read::read(&mut stream, &mut request);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}",
                );
            }
        });
        let runtime = Runtime::new(&format!("http://127.0.0.1:{port}")).expect("a URL");
        // Shorter than the runtime client's 30 s answer timeout, which the first probe got.
        let result = runtime.wait_healthy(Duration::from_secs(20));
        assert!(result.is_ok(), "{result:?}");
    }

    #[test]
    fn a_runtime_that_never_answers_fails_after_the_start_timeout() {
        // A port nothing listens on: bind one, note it, free it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or(9);
        let runtime = Runtime::new(&format!("http://127.0.0.1:{port}")).ok();
        let started = Instant::now();
        let result = runtime.map(|r| r.wait_healthy(Duration::from_millis(300)));
        assert!(
            matches!(result, Some(Err(Error::Runtime { .. }))),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
