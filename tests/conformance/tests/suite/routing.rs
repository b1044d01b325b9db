//! Routing: an unknown path is 404 `not_found`; a known path with the wrong
//! method is 405 `method_not_allowed` with an `Allow` header and an `allowed`
//! field. Auth is checked before routing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::{AgentLog, assert_error, assert_not_allowed, call, json};

#[test]
fn an_unknown_path_is_not_found() {
    let log = AgentLog::fresh("unknown-path");
    for path in [
        "/api/nothing-here".to_owned(),
        "/api/towns".to_owned(),
        log.path("/no-such-thing"),
        log.path("/events/extra"),
        format!("/api/towns/{}/rigs/{}/nope/a/events", log.town, log.rig),
        "/healthz/extra".to_owned(),
    ] {
        let reply = call("GET", &path).send();
        assert_error(&reply, 404, "not_found");
    }
}

#[test]
fn delete_on_events_is_method_not_allowed() {
    let log = AgentLog::fresh("delete-events");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let reply = call("DELETE", &log.path("/events")).send();
    assert_not_allowed(&reply, &["GET", "POST"]);
    log.assert_unchanged(&before);
}

#[test]
fn put_on_events_is_method_not_allowed() {
    let log = AgentLog::fresh("put-events");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let reply = call("PUT", &log.path("/events"))
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    assert_not_allowed(&reply, &["GET", "POST"]);
    let patch = call("PATCH", &log.path("/events"))
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    assert_not_allowed(&patch, &["GET", "POST"]);
    log.assert_unchanged(&before);
}

#[test]
fn post_on_sessions_is_method_not_allowed() {
    let log = AgentLog::fresh("post-sessions");
    let reply = call("POST", &log.path("/sessions")).json(&json!({})).send();
    assert_not_allowed(&reply, &["GET"]);
}

#[test]
fn post_on_healthz_is_method_not_allowed() {
    let reply = call("POST", "/healthz").json(&json!({})).send();
    assert_not_allowed(&reply, &["GET"]);
}
