//! A town worth looking at, made through the API with an admin token: two
//! containers (the first evicted, the second evicting), a registry, a
//! Mayor whose message waits for the drain, and a worker with a
//! conversation, a checkpoint and a snapshot.

use super::{Target, support};
use serde_json::{Value, json};

pub const RIG: &str = "rig-a";
pub const WORKER: &str = "polecat-1";

/// `method path` under the town with an admin token and a JSON body; the
/// answer's JSON, after checking its status is a success.
pub fn call(target: &Target, method: &str, path: &str, body: Option<Value>) -> Value {
    let url = format!("{}/api/towns/{}{path}", target.base, target.town);
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(&url)
        .header("Authorization", target.admin())
        .header("Content-Type", "application/json");
    let request = request
        .body(body.map(|b| b.to_string()).unwrap_or_default())
        .expect("a request");
    let mut response = support::agent().run(request).expect("the host answers");
    let status = response.status();
    let text = response.body_mut().read_to_string().unwrap_or_default();
    assert!(status.is_success(), "{method} {path}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The worker's path under the town.
pub fn worker(path: &str) -> String {
    format!("/rigs/{RIG}/agents/{WORKER}{path}")
}

/// Appends one event to the worker; returns its seq.
pub fn append(target: &Target, marker: &str) -> u64 {
    let body = json!({"events": [{"type": "tool.output", "data": {"marker": marker}}]});
    let answer = call(target, "POST", &worker("/events"), Some(body));
    answer["last_seq"].as_u64().expect("a seq")
}

/// Builds the town; see the module docs.
pub fn seed(target: &Target) {
    let heartbeat = |container: &str| {
        call(
            target,
            "POST",
            "/heartbeat",
            Some(json!({"container_id": container})),
        );
    };
    let evict = |container: &str, reason: &str| {
        let body = json!({"container_id": container, "reason": reason});
        call(target, "POST", "/container-eviction", Some(body));
    };
    heartbeat("container-0");
    evict("container-0", "node drained");
    heartbeat("container-1");
    call(
        target,
        "PUT",
        "/container-registry",
        Some(json!({
            "container_id": "container-1",
            "agents": [
                {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "ses-mayor"},
                {"agent_id": WORKER, "rig_id": RIG, "role": "polecat", "session_id": "ses-1", "port": 4096},
            ],
        })),
    );
    call(
        target,
        "PUT",
        "/rigs/hq/agents/mayor",
        Some(json!({"role": "mayor"})),
    );
    call(target, "PUT", &worker(""), Some(json!({"role": "polecat"})));
    call(
        target,
        "POST",
        &worker("/events"),
        Some(json!({"events": conversation()})),
    );
    call(
        target,
        "PUT",
        &worker("/checkpoint"),
        Some(json!({"step": 3, "plan": "fix the flaky test"})),
    );
    put_snapshot(target, &worker("/db-snapshot"), 7, 48 * 1024);
    evict("container-1", "SIGTERM");
    call(
        target,
        "POST",
        "/mayor/message",
        Some(json!({"text": "How is the rig doing?"})),
    );
}

/// kilo's events for one user turn and a streamed reply.
fn conversation() -> Value {
    let event =
        |kind: &str, data: Value| json!({"type": kind, "session_id": "ses-1", "data": data});
    json!([
        event(
            "message.updated",
            json!({"info": {"id": "m1", "role": "user"}})
        ),
        event(
            "message.part.updated",
            json!({"part": {"id": "p1", "messageID": "m1", "type": "text", "text": "Why does the build fail?"}})
        ),
        event(
            "message.updated",
            json!({"info": {"id": "m2", "role": "assistant", "time": {"created": 1}}})
        ),
        event(
            "message.part.updated",
            json!({"part": {"id": "p2", "messageID": "m2", "type": "text", "text": "A missing lockfile entry; I added it.", "time": {"start": 1, "end": 2}}})
        ),
        event(
            "message.updated",
            json!({"info": {"id": "m2", "role": "assistant", "time": {"created": 1, "completed": 2}}})
        ),
    ])
}

/// Stores `size` bytes of `byte` as the kilo.db at `path` (under the town).
pub fn put_snapshot(target: &Target, path: &str, byte: u8, size: usize) {
    let url = format!("{}/api/towns/{}{path}", target.base, target.town);
    let request = ureq::http::Request::builder()
        .method("PUT")
        .uri(&url)
        .header("Authorization", target.admin())
        .header("Content-Type", "application/octet-stream")
        .body(vec![byte; size])
        .expect("a request");
    let response = support::agent().run(request).expect("the host answers");
    assert_eq!(response.status().as_u16(), 201, "the snapshot is stored");
}
