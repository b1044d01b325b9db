//! Sessions: created by the first event that names them, listed oldest first
//! with status `running`, their first and last seq and their event count.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::{AgentLog, Value, json, now_ms, num};

#[test]
fn an_agent_with_no_events_has_no_sessions() {
    let log = AgentLog::fresh("no-sessions");
    assert_eq!(log.sessions(), json!({"sessions": []}));
}

#[test]
fn events_create_sessions_implicitly() {
    let log = AgentLog::fresh("sessions");
    let start = now_ms();
    log.append(json!([
        {"type": "a", "session_id": "first"},
        {"type": "a"},
        {"type": "b", "session_id": "second"},
    ]));
    log.append(json!([
        {"type": "c", "session_id": "first"},
        {"type": "d", "session_id": "first"},
    ]));
    let end = now_ms();
    let listing = log.sessions();
    let sessions = listing["sessions"]
        .as_array()
        .unwrap_or_else(|| panic!("a sessions array: {listing}"));
    let ids: Vec<&Value> = sessions.iter().map(|s| &s["session_id"]).collect();
    assert_eq!(ids, vec![&json!("first"), &json!("second")], "oldest first");
    let first = &sessions[0];
    assert_eq!(first["status"], json!("running"));
    assert_eq!(first["first_seq"], json!(1));
    assert_eq!(first["last_seq"], json!(5));
    assert_eq!(first["event_count"], json!(3));
    let second = &sessions[1];
    assert_eq!(second["status"], json!("running"));
    assert_eq!(second["first_seq"], json!(3));
    assert_eq!(second["last_seq"], json!(3));
    assert_eq!(second["event_count"], json!(1));
    for session in sessions {
        let created = num(session, "created_at");
        let updated = num(session, "updated_at");
        assert!(created <= updated, "created_at ≤ updated_at: {session}");
        assert!(
            created + 60_000 >= start && updated <= end + 60_000,
            "times in ms: {session}"
        );
    }
}

#[test]
fn events_without_a_session_create_none() {
    let log = AgentLog::fresh("sessionless");
    log.append(json!([{"type": "a"}, {"type": "b", "data": {"session_id": "not-a-session"}}]));
    assert_eq!(log.sessions(), json!({"sessions": []}));
}
