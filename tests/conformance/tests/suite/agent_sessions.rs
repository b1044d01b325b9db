//! One session of an agent, `/sessions/{session}`: `PUT` creates or updates
//! it (status and metadata), `GET` reads it, `DELETE` removes it with its
//! events, whose seqs are never reused. The listing shows the same shape.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Agent, assert_keys, assert_not_allowed};
use stasis_conformance::{
    Value, assert_error, assert_message_names, call, foreign_token, json, num, seqs, town_token,
    unique_id,
};

const SESSION_FIELDS: [&str; 8] = [
    "session_id",
    "status",
    "metadata",
    "first_seq",
    "last_seq",
    "event_count",
    "created_at",
    "updated_at",
];

fn put(agent: &Agent, session: &str, body: &Value) -> stasis_conformance::Reply {
    call("PUT", &agent.path(&format!("/sessions/{session}")))
        .json(body)
        .send()
}

fn get(agent: &Agent, session: &str) -> stasis_conformance::Reply {
    call("GET", &agent.path(&format!("/sessions/{session}"))).send()
}

#[test]
fn put_creates_a_running_session_with_no_events() {
    let agent = Agent::fresh("session-create");
    let created = put(&agent, "s1", &json!({})).ok();
    assert_keys(&created, &SESSION_FIELDS);
    assert_eq!(created["session_id"], json!("s1"));
    assert_eq!(created["status"], json!("running"));
    assert_eq!(created["metadata"], Value::Null);
    assert_eq!(created["event_count"], json!(0));
    assert_eq!(get(&agent, "s1").ok(), created);
}

#[test]
fn put_sets_status_and_metadata() {
    let agent = Agent::fresh("session-update");
    agent
        .log
        .append(json!([{"type": "a", "session_id": "s1"}, {"type": "b", "session_id": "s1"}]));
    for status in ["completed", "failed", "closed", "running"] {
        let body = json!({"status": status, "metadata": {"status_was": status}});
        let updated = put(&agent, "s1", &body).ok();
        assert_eq!(updated["status"], json!(status));
        assert_eq!(updated["metadata"], json!({"status_was": status}));
        assert_eq!(updated["first_seq"], json!(1));
        assert_eq!(updated["last_seq"], json!(2));
        assert_eq!(updated["event_count"], json!(2));
        assert_eq!(get(&agent, "s1").ok(), updated);
    }
}

#[test]
fn the_listing_shows_each_session_with_its_metadata() {
    let agent = Agent::fresh("session-listing");
    agent.log.append(json!([{"type": "a", "session_id": "s1"}]));
    put(
        &agent,
        "s2",
        &json!({"status": "completed", "metadata": {"k": "v"}}),
    )
    .ok();
    let listing = agent.log.sessions();
    let sessions = listing["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("a sessions array: {listing}"));
    assert_eq!(sessions.len(), 2, "{listing}");
    for session in sessions {
        assert_keys(session, &SESSION_FIELDS);
    }
    assert_eq!(sessions[0]["session_id"], json!("s1"), "oldest first");
    assert_eq!(sessions[0]["metadata"], Value::Null);
    assert_eq!(sessions[1]["session_id"], json!("s2"));
    assert_eq!(sessions[1]["status"], json!("completed"));
    assert_eq!(sessions[1]["metadata"], json!({"k": "v"}));
    assert_eq!(get(&agent, "s2").ok(), sessions[1]);
}

#[test]
fn a_session_named_by_events_reads_back_as_running() {
    let agent = Agent::fresh("session-implicit");
    agent.log.append(json!([
        {"type": "a", "session_id": "s1"},
        {"type": "b"},
        {"type": "c", "session_id": "s1"},
    ]));
    let session = get(&agent, "s1").ok();
    assert_eq!(session["status"], json!("running"));
    assert_eq!(session["first_seq"], json!(1));
    assert_eq!(session["last_seq"], json!(3));
    assert_eq!(session["event_count"], json!(2));
    assert!(num(&session, "created_at") <= num(&session, "updated_at"));
}

#[test]
fn an_unknown_session_is_not_found() {
    let agent = Agent::fresh("session-unknown");
    agent.log.append(json!([{"type": "a", "session_id": "s1"}]));
    assert_error(&get(&agent, "s2"), 404, "session_not_found");
    let delete = call("DELETE", &agent.path("/sessions/s2")).send();
    assert_error(&delete, 404, "session_not_found");
}

#[test]
fn delete_removes_the_session_and_its_events_and_never_reuses_seqs() {
    let agent = Agent::fresh("session-delete");
    agent.log.append(json!([
        {"type": "a", "session_id": "gone"},
        {"type": "b", "session_id": "kept"},
        {"type": "c", "session_id": "gone"},
        {"type": "d"},
    ]));
    let reply = call("DELETE", &agent.path("/sessions/gone")).send();
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_error(&get(&agent, "gone"), 404, "session_not_found");
    assert_eq!(seqs(&agent.log.read("")), vec![2, 4]);
    assert_eq!(agent.log.read("session_id=gone")["events"], json!([]));
    let listed: Vec<Value> = agent.log.sessions()["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("a sessions array"))
        .iter()
        .map(|s| s["session_id"].clone())
        .collect();
    assert_eq!(listed, vec![json!("kept")]);
    let next = agent
        .log
        .append(json!([{"type": "e", "session_id": "gone"}]));
    assert_eq!(next["first_seq"], json!(5), "seqs are never reused");
}

#[test]
fn a_status_outside_the_four_is_an_invalid_request() {
    let agent = Agent::fresh("session-bad-status");
    put(&agent, "s1", &json!({"status": "completed", "metadata": 1})).ok();
    let before = agent.state();
    for status in [
        json!("paused"),
        json!("RUNNING"),
        json!(""),
        json!(1),
        json!(null),
    ] {
        let reply = put(&agent, "s1", &json!({ "status": status }));
        assert_eq!(reply.status, 400, "status {status}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "status");
    }
    for body in [json!([]), json!("running")] {
        assert_error(&put(&agent, "s1", &body), 400, "invalid_request");
    }
    assert_error(
        &put(&agent, "s9", &json!({"status": "x"})),
        400,
        "invalid_request",
    );
    agent.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let agent = Agent::fresh("session-malformed");
    let before = agent.state();
    let reply = call("PUT", &agent.path("/sessions/s1"))
        .header("Content-Type", "application/json")
        .body("{\"status\": ")
        .send();
    assert_error(&reply, 400, "invalid_json");
    agent.assert_unchanged(&before);
}

#[test]
fn an_invalid_session_id_is_refused() {
    let agent = Agent::fresh("session-bad-id");
    let before = agent.state();
    for bad in ["a%20b".to_owned(), "a~b".to_owned(), "s".repeat(129)] {
        assert_error(&put(&agent, &bad, &json!({})), 400, "invalid_id");
        assert_error(&get(&agent, &bad), 400, "invalid_id");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("session-methods");
    put(&agent, "s1", &json!({})).ok();
    let before = agent.state();
    for method in ["POST", "PATCH"] {
        let reply = call(method, &agent.path("/sessions/s1"))
            .json(&json!({"status": "closed"}))
            .send();
        assert_not_allowed(&reply, &["GET", "PUT", "DELETE"]);
    }
    agent.assert_unchanged(&before);
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let agent = Agent::fresh("session-auth");
    put(&agent, "s1", &json!({})).ok();
    let before = agent.state();
    let path = agent.path("/sessions/s1");
    let body = json!({"status": "closed"});
    let foreign = call("PUT", &path)
        .token(&foreign_token())
        .json(&body)
        .send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = town_token(&unique_id("elsewhere"));
    let put_elsewhere = call("PUT", &path).token(&elsewhere).json(&body).send();
    assert_error(&put_elsewhere, 403, "forbidden");
    let delete_elsewhere = call("DELETE", &path).token(&elsewhere).send();
    assert_error(&delete_elsewhere, 403, "forbidden");
    agent.assert_unchanged(&before);
}
