//! Auth: `Authorization: Bearer <token>`, tokens minted from the server's
//! secret; an admin token reaches everything, a town token its own town only.
//! A refused request changes nothing.

use stasis_conformance::{
    AgentLog, admin_token, assert_error, call, foreign_token, json, town_token, unique_id,
};

#[test]
fn healthz_needs_no_token() {
    let reply = call("GET", "/healthz").no_token().send();
    assert_eq!(reply.ok(), json!({"status": "ok"}));
}

#[test]
fn livez_needs_no_token() {
    let reply = call("GET", "/livez").no_token().send();
    assert_eq!(reply.ok(), json!({"status": "ok"}));
}

#[test]
fn a_request_without_a_token_is_unauthorized() {
    let log = AgentLog::fresh("no-token");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let read = call("GET", &log.path("/events")).no_token().send();
    assert_error(&read, 401, "unauthorized");
    let append = call("POST", &log.path("/events"))
        .no_token()
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    assert_error(&append, 401, "unauthorized");
    log.assert_unchanged(&before);
}

#[test]
fn a_garbage_token_is_unauthorized() {
    let log = AgentLog::fresh("garbage-token");
    let before = log.state();
    let mut tampered = admin_token();
    let flipped = if tampered.ends_with('0') { '1' } else { '0' };
    tampered.pop();
    tampered.push(flipped);
    for token in [
        "garbage",
        "stasis_v1.admin.zz",
        "stasis_v1.admin",
        tampered.as_str(),
    ] {
        let reply = call("POST", &log.path("/events"))
            .token(token)
            .json(&json!({"events": [{"type": "x"}]}))
            .send();
        assert_error(&reply, 401, "unauthorized");
    }
    log.assert_unchanged(&before);
}

#[test]
fn a_token_that_is_not_a_bearer_token_is_unauthorized() {
    let log = AgentLog::fresh("not-bearer");
    let before = log.state();
    let admin = admin_token();
    for header in [admin.clone(), format!("Basic {admin}"), "Bearer".to_owned()] {
        let reply = call("POST", &log.path("/events"))
            .authorization(&header)
            .json(&json!({"events": [{"type": "x"}]}))
            .send();
        assert_error(&reply, 401, "unauthorized");
    }
    log.assert_unchanged(&before);
}

#[test]
fn the_bearer_scheme_is_accepted_in_any_case() {
    let log = AgentLog::fresh("scheme-case");
    for scheme in ["bearer", "BEARER"] {
        let reply = call("POST", &log.path("/events"))
            .authorization(&format!("{scheme} {}", admin_token()))
            .json(&json!({"events": [{"type": "x"}]}))
            .send();
        reply.ok();
    }
    assert_eq!(log.state().last_seq, 2);
}

#[test]
fn a_token_minted_with_another_secret_is_unauthorized() {
    let log = AgentLog::fresh("foreign-token");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let reply = call("POST", &log.path("/events"))
        .token(&foreign_token())
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    assert_error(&reply, 401, "unauthorized");
    let read = call("GET", &log.path("/events"))
        .token(&foreign_token())
        .send();
    assert_error(&read, 401, "unauthorized");
    log.assert_unchanged(&before);
}

#[test]
fn a_town_token_on_another_town_is_forbidden() {
    let log = AgentLog::fresh("other-town");
    log.append(json!([{"type": "seed"}]));
    let before = log.state();
    let token = town_token(&unique_id("elsewhere"));
    let append = call("POST", &log.path("/events"))
        .token(&token)
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    assert_error(&append, 403, "forbidden");
    let read = call("GET", &log.path("/events")).token(&token).send();
    assert_error(&read, 403, "forbidden");
    let sessions = call("GET", &log.path("/sessions")).token(&token).send();
    assert_error(&sessions, 403, "forbidden");
    log.assert_unchanged(&before);
}

#[test]
fn a_town_token_reaches_its_own_town() {
    // Town ids may contain dots, and the token format splits on dots.
    let town = format!("{}.with.dots", unique_id("own-town"));
    let log = AgentLog::new(&town, "rig.a", "agent:1");
    let token = town_token(&town);
    let append = call("POST", &log.path("/events"))
        .token(&token)
        .json(&json!({"events": [{"type": "x", "data": 1}]}))
        .send();
    assert_eq!(
        append.ok(),
        json!({"first_seq": 1, "last_seq": 1, "duplicate": false})
    );
    let page = call("GET", &log.path("/events")).token(&token).send().ok();
    assert_eq!(page["events"][0]["data"], json!(1));
    let sessions = call("GET", &log.path("/sessions")).token(&token).send();
    assert_eq!(sessions.status, 200, "{}", sessions.text());
}

#[test]
fn a_town_token_for_a_prefix_of_the_town_is_forbidden() {
    let town = unique_id("prefix");
    let log = AgentLog::new(&format!("{town}x"), "r", "a");
    let reply = call("GET", &log.path("/events"))
        .token(&town_token(&town))
        .send();
    assert_error(&reply, 403, "forbidden");
}

#[test]
fn an_admin_token_reaches_every_town() {
    for n in 0..3 {
        let log = AgentLog::fresh(&format!("admin-{n}"));
        let append = call("POST", &log.path("/events"))
            .token(&admin_token())
            .json(&json!({"events": [{"type": "x"}]}))
            .send();
        assert_eq!(append.ok()["first_seq"], json!(1));
        let read = call("GET", &log.path("/events"))
            .token(&admin_token())
            .send();
        assert_eq!(read.ok()["last_seq"], json!(1));
    }
}
