//! Ids: town, rig, agent, session and producer ids match
//! `[A-Za-z0-9_.:-]{1,128}` and are not `.` or `..`. Path segments are
//! percent-decoded before the check, so `%2F` and `%2E%2E` are refused too.
//! Paths here are sent byte for byte over a raw socket, so nothing between
//! the suite and the server tidies them up.

use stasis_conformance::{AgentLog, admin_token, assert_error, json, on_edge, raw, unique_id};

/// A segment that decodes to `.` or `..`.
fn is_dot_segment(segment: &str) -> bool {
    let decoded = segment.replace("%2E", ".").replace("%2e", ".");
    decoded == "." || decoded == ".."
}

/// A bad id is refused: 400 `invalid_id`. On the edge, the Workers runtime
/// parses the URL by the WHATWG standard before the worker sees it, which
/// resolves dot segments (`..`, `%2E%2E`, `.`): the path loses a segment,
/// no route has that shape, and the answer is 404. Refused either way.
fn assert_refused(bad: &str, reply: &stasis_conformance::Reply) {
    if on_edge() && is_dot_segment(bad) {
        // The runtime resolved the dot segment, so the path names another
        // route or none: refused as such, the log untouched.
        assert!(
            matches!(reply.status, 404 | 405),
            "segment {bad:?} on the edge: {} {}",
            reply.status,
            reply.text()
        );
    } else {
        assert_eq!(reply.status, 400, "segment {bad:?}: {}", reply.text());
        assert_error(reply, 400, "invalid_id");
    }
}

/// Segments that must be refused as ids, as they appear in a path.
fn bad_segments() -> Vec<String> {
    let mut bad: Vec<String> = [
        "..", "%2E%2E", "%2e%2e", ".%2E", "%2E", "a%2Fb", "%2F", "a%20b", "a~b", "%C3%A9", "a%00b",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    bad.push("a".repeat(129));
    bad
}

fn raw_append(path: &str) -> stasis_conformance::Reply {
    let auth = format!("Bearer {}", admin_token());
    let body = json!({"events": [{"type": "x"}]}).to_string().into_bytes();
    raw::request(
        "POST",
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

fn raw_read(path: &str) -> stasis_conformance::Reply {
    let auth = format!("Bearer {}", admin_token());
    raw::request("GET", path, &[("Authorization", &auth)], Vec::new())
}

#[test]
fn a_bad_agent_segment_is_an_invalid_id() {
    let log = AgentLog::fresh("bad-agent");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for bad in bad_segments() {
        let path = format!(
            "/api/towns/{}/rigs/{}/agents/{bad}/events",
            log.town, log.rig
        );
        assert_refused(&bad, &raw_append(&path));
        assert_refused(&bad, &raw_read(&path));
    }
    log.assert_unchanged(&before);
}

#[test]
fn a_bad_rig_segment_is_an_invalid_id() {
    let log = AgentLog::fresh("bad-rig");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for bad in bad_segments() {
        let path = format!(
            "/api/towns/{}/rigs/{bad}/agents/{}/events",
            log.town, log.agent
        );
        assert_refused(&bad, &raw_append(&path));
    }
    log.assert_unchanged(&before);
}

#[test]
fn a_bad_town_segment_is_an_invalid_id() {
    for bad in bad_segments() {
        let path = format!("/api/towns/{bad}/rigs/r/agents/a/events");
        assert_refused(&bad, &raw_append(&path));
        assert_refused(&bad, &raw_read(&path));
    }
}

/// `n` characters: a fresh prefix padded with `x`.
fn long_id(label: &str, n: usize) -> String {
    let mut id = unique_id(label);
    while id.len() < n {
        id.push('x');
    }
    id.truncate(n);
    id
}

#[test]
fn ids_of_128_characters_work_everywhere() {
    let town = long_id("long", 128);
    let log = AgentLog::new(&town, &"r".repeat(128), &"a".repeat(128));
    let session = "s".repeat(128);
    let body = json!({
        "events": [{"type": "x", "session_id": session}],
        "producer_id": "p".repeat(128),
        "producer_seq": 0,
    });
    assert_eq!(log.post(&body).ok()["first_seq"], json!(1));
    let page = log.read("after=0");
    assert_eq!(page["events"][0]["session_id"], json!(session));
    assert_eq!(log.sessions()["sessions"][0]["session_id"], json!(session));
}

#[test]
fn ids_with_dots_colons_dashes_and_underscores_work() {
    let town = format!("T.a:b-c_d.{}", unique_id("punct"));
    let log = AgentLog::new(&town, "rig.1:2-3_4", "...");
    let body = json!({
        "events": [{"type": "x", "session_id": "s.1:2-3_4"}],
        "producer_id": "p.1:x-y_Z",
        "producer_seq": 7,
    });
    assert_eq!(log.post(&body).ok()["first_seq"], json!(1));
    let page = log.read("after=0");
    assert_eq!(page["events"][0]["session_id"], json!("s.1:2-3_4"));
    let sibling = log.sibling("A-b_C.d:e");
    sibling.append(json!([{"type": "y"}, {"type": "z"}]));
    assert_eq!(sibling.read("")["last_seq"], json!(2));
    assert_eq!(log.read("")["last_seq"], json!(1));
}

#[test]
fn ids_are_case_sensitive() {
    let log = AgentLog::fresh("case");
    let upper = log.sibling("AGENT-1");
    log.append(json!([{"type": "lower"}]));
    upper.append(json!([{"type": "upper"}, {"type": "upper"}]));
    assert_eq!(log.read("")["last_seq"], json!(1));
    assert_eq!(upper.read("")["last_seq"], json!(2));
}

#[test]
fn a_bad_session_id_in_an_event_is_an_invalid_id() {
    let log = AgentLog::fresh("bad-session");
    log.append(json!([{"type": "seed", "session_id": "good"}]));
    let before = log.state();
    for bad in ["", ".", "..", "a/b", "a b", "é", &"s".repeat(129)] {
        let body = json!({"events": [{"type": "ok"}, {"type": "x", "session_id": bad}]});
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "session {bad:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_id");
    }
    log.assert_unchanged(&before);
}

#[test]
fn a_bad_producer_id_is_an_invalid_id() {
    let log = AgentLog::fresh("bad-producer");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    for bad in ["", ".", "..", "a/b", "a b", &"p".repeat(129)] {
        let body = json!({"events": [{"type": "x"}], "producer_id": bad, "producer_seq": 0});
        let reply = log.post(&body);
        assert_eq!(reply.status, 400, "producer {bad:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_id");
    }
    log.assert_unchanged(&before);
}
