//! Order of checks, as `docs/http-api.md` fixes it: auth (401) → route (404,
//! 405) → ids (400) → town scope (403) → content type (415) → body size (413)
//! → body (400) → the operation. Each case breaks two rules at once and
//! expects the earlier one to answer.

use stasis_conformance::{
    AgentLog, admin_token, assert_error, call, json, raw, town_token, unique_id,
};

#[test]
fn auth_is_checked_before_routing() {
    let log = AgentLog::fresh("auth-before-route");
    assert_error(
        &call("GET", "/api/nothing-here").no_token().send(),
        401,
        "unauthorized",
    );
    assert_error(
        &call("DELETE", &log.path("/events")).no_token().send(),
        401,
        "unauthorized",
    );
}

#[test]
fn routing_is_checked_before_town_scope() {
    let log = AgentLog::fresh("route-before-scope");
    let token = town_token(&unique_id("elsewhere"));
    assert_error(
        &call("GET", &log.path("/nope")).token(&token).send(),
        404,
        "not_found",
    );
    let wrong_method = call("DELETE", &log.path("/events")).token(&token).send();
    assert_error(&wrong_method, 405, "method_not_allowed");
}

#[test]
fn ids_are_checked_before_town_scope() {
    let town = unique_id("ids-before-scope");
    let auth = format!("Bearer {}", town_token(&unique_id("elsewhere")));
    let path = format!("/api/towns/{town}/rigs/r/agents/a%2Fb/events");
    let reply = raw::request("GET", &path, &[("Authorization", &auth)], Vec::new());
    assert_error(&reply, 400, "invalid_id");
}

#[test]
fn town_scope_is_checked_before_content_type() {
    let log = AgentLog::fresh("scope-before-type");
    let reply = call("POST", &log.path("/events"))
        .token(&town_token(&unique_id("elsewhere")))
        .header("Content-Type", "text/plain")
        .body("not json")
        .send();
    assert_error(&reply, 403, "forbidden");
}

#[test]
fn content_type_is_checked_before_body_size() {
    let log = AgentLog::fresh("type-before-size");
    let auth = format!("Bearer {}", admin_token());
    let body = vec![b'x'; 4 * 1024 * 1024 + 1];
    let path = log.path("/events");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "text/plain"),
    ];
    assert_error(
        &raw::request("POST", &path, &headers, body),
        415,
        "unsupported_media_type",
    );
}

#[test]
fn body_size_is_checked_before_the_body() {
    let log = AgentLog::fresh("size-before-body");
    let auth = format!("Bearer {}", admin_token());
    let body = vec![b'{'; 4 * 1024 * 1024 + 1];
    let path = log.path("/events");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    assert_error(
        &raw::request("POST", &path, &headers, body),
        413,
        "body_too_large",
    );
    assert_eq!(log.read("")["last_seq"], json!(0));
}

#[test]
fn content_type_is_checked_before_the_body() {
    let log = AgentLog::fresh("type-before-body");
    let reply = call("POST", &log.path("/events"))
        .header("Content-Type", "text/plain")
        .body("{not json")
        .send();
    assert_error(&reply, 415, "unsupported_media_type");
}

#[test]
fn the_method_is_checked_before_ids() {
    let town = unique_id("method-before-ids");
    let auth = format!("Bearer {}", admin_token());
    let path = format!("/api/towns/{town}/rigs/r/agents/a%2Fb/events");
    let reply = raw::request("DELETE", &path, &[("Authorization", &auth)], Vec::new());
    assert_error(&reply, 405, "method_not_allowed");
}
