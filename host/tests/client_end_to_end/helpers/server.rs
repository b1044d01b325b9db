//! The server: `stasis serve` started per test, clients of it, and plain requests to it.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use stasis_client::{AgentRef, Client, Config, RetryPolicy};

use crate::support::{self, Server, admin, agent};

/// `stasis serve` on `data_dir`, its components compiled once per run.
pub fn start_server(data_dir: &Path) -> Server {
    support::with_compiled_components(data_dir);
    Server::start(data_dir, &[])
}

pub fn admin_token() -> String {
    admin()
        .strip_prefix("Bearer ")
        .expect("a bearer value")
        .to_owned()
}

/// A client of `server` with the admin token and the default retry policy.
pub fn client(server: &Server) -> Client {
    Client::new(Config::new(&server.base, Some(admin_token())).expect("config"))
}

/// A client that gives up quickly (for the failures that are retried).
pub fn impatient_client(server: &Server) -> Client {
    client(server).with_policy(RetryPolicy {
        max_attempts: 3,
        max_elapsed: Duration::from_secs(10),
        initial_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    })
}

/// A JSON request as admin: the status and the JSON answer (`null` when empty).
pub fn call(server: &Server, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let url = format!("{}{path}", server.base);
    let client = agent();
    let sent = match (method, body) {
        ("GET", None) => client.get(&url).header("Authorization", admin()).call(),
        ("PUT", Some(body)) => client
            .put(&url)
            .header("Authorization", admin())
            .send_json(body),
        ("POST", Some(body)) => client
            .post(&url)
            .header("Authorization", admin())
            .send_json(body),
        _ => panic!("no such call: {method} with {body:?}"),
    };
    let mut response = sent.expect("the server answers");
    let text = response.body_mut().read_to_string().expect("a text answer");
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).expect("a JSON answer")
    };
    (response.status().as_u16(), value)
}

/// `HEAD /db-snapshot`: the status and `X-Stasis-Sha256`.
pub fn head_snapshot(server: &Server, who: &AgentRef) -> (u16, Option<String>) {
    let url = format!("{}{}", server.base, who.path("/db-snapshot"));
    let response = agent()
        .head(&url)
        .header("Authorization", admin())
        .call()
        .expect("the server answers");
    let sha = response
        .headers()
        .get("x-stasis-sha256")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (response.status().as_u16(), sha)
}
