//! Tokens: the container-token exchange, refreshes, lifetimes, read-only
//! narrowing, every configured key, and what a 401 says.

use std::time::{Duration, Instant};

use stasis_api::auth::{Grant, Scope};
use stasis_conformance::tokens::{self, HOUR, container_token, mint, read_only_token};
use stasis_conformance::town::Town;
use stasis_conformance::{AgentLog, Reply, Value, assert_error, call, json, num, town_token};

fn exchange(town: &Town, token: &str, container: &str) -> Reply {
    call("POST", &town.path("/container-token"))
        .token(token)
        .json(&json!({ "container_id": container }))
        .send()
}

fn refresh(token: &str) -> Reply {
    call("POST", "/api/token/refresh").token(token).send()
}

fn lifetime_ms(issued: &Value) -> u64 {
    num(issued, "expires_at") - num(issued, "issued_at")
}

fn token_of(issued: &Value) -> String {
    issued["token"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_town_token_exchanges_for_a_container_token_of_the_same_lifetime() {
    let town = Town::fresh("exchange");
    let issued = exchange(&town, &town_token(&town.id), "c-1").ok();
    assert_eq!(issued["scope"], json!("container"));
    assert_eq!(issued["town_id"], json!(town.id));
    assert_eq!(issued["container_id"], json!("c-1"));
    assert_eq!(issued["read_only"], json!(false));
    assert_eq!(lifetime_ms(&issued), HOUR.as_secs() * 1000);
    let beat = call("POST", &town.path("/heartbeat"))
        .token(&token_of(&issued))
        .json(&json!({"container_id": "c-1"}))
        .send();
    assert_eq!(beat.status, 200, "{}", beat.text());
}

#[test]
fn a_container_token_lives_at_most_a_day_whatever_its_parent() {
    let town = Town::fresh("exchange-cap");
    let week = mint(
        &Grant::new(Scope::Town(town.id.clone())),
        Duration::from_secs(7 * 86_400),
    );
    let issued = exchange(&town, &week, "c-1").ok();
    assert_eq!(lifetime_ms(&issued), 86_400 * 1000);
}

#[test]
fn a_read_only_token_only_ever_mints_read_only_tokens() {
    let town = Town::fresh("read-only-mint");
    let issued = exchange(&town, &read_only_token(&town.id), "c-1").ok();
    assert_eq!(issued["read_only"], json!(true));
    let container = token_of(&issued);
    let refreshed = refresh(&container).ok();
    assert_eq!(refreshed["read_only"], json!(true));
    let log = AgentLog::new(&town.id, "r", "a");
    let write = call("POST", &log.path("/events"))
        .token(&token_of(&refreshed))
        .json(&json!({"events": [{"type": "x"}]}))
        .send();
    let error = assert_error(&write, 403, "forbidden");
    assert_eq!(error.get("reason"), Some(&json!("read_only")));
    let read = call("GET", &log.path("/events"))
        .token(&token_of(&refreshed))
        .send();
    assert_eq!(read.status, 200, "{}", read.text());
}

#[test]
fn a_refresh_keeps_the_grant_and_lifetime_and_signs_with_the_signing_key() {
    let town = Town::fresh("refresh");
    let old = container_token(&town.id, "c-1");
    let refreshed = refresh(&old).ok();
    assert_eq!(refreshed["scope"], json!("container"));
    assert_eq!(refreshed["container_id"], json!("c-1"));
    assert_eq!(refreshed["town_id"], json!(town.id));
    assert_eq!(lifetime_ms(&refreshed), HOUR.as_secs() * 1000);
    let signing = stasis_conformance::target().keys.signing_key_id();
    assert_eq!(refreshed["key_id"], json!(signing));
    let admin = refresh(&tokens::admin_token()).ok();
    assert_eq!(
        (admin["scope"].clone(), admin.get("town_id")),
        (json!("admin"), None)
    );
}

#[test]
fn a_superseded_container_gets_no_new_token() {
    let town = Town::fresh("superseded-mint");
    town.heartbeat("c-1");
    town.heartbeat("c-2");
    for reply in [
        exchange(&town, &town_token(&town.id), "c-1"),
        refresh(&container_token(&town.id, "c-1")),
    ] {
        let error = assert_error(&reply, 409, "container_fenced");
        assert_eq!(error.get("current_container_id"), Some(&json!("c-2")));
    }
}

#[test]
fn token_route_bodies_are_checked() {
    let town = Town::fresh("token-bodies");
    let admin = tokens::admin_token();
    let unknown = call("POST", "/api/token/refresh")
        .token(&admin)
        .json(&json!({"ttl": 99999}))
        .send();
    assert_error(&unknown, 400, "invalid_request");
    let bad_id = exchange(&town, &admin, "..");
    assert_eq!(bad_id.status, 400, "{}", bad_id.text());
    let other_town = exchange(&Town::fresh("elsewhere"), &town_token(&town.id), "c-1");
    assert_error(&other_town, 403, "forbidden");
}

#[test]
fn a_token_of_every_configured_key_verifies() {
    let log = AgentLog::fresh("every-key");
    for key_id in tokens::key_ids() {
        let token = tokens::mint_with(&key_id, &Grant::new(Scope::Admin), HOUR);
        let read = call("GET", &log.path("/events")).token(&token).send();
        assert_eq!(read.status, 200, "key {key_id}: {}", read.text());
    }
}

#[test]
fn a_token_of_the_retired_format_is_refused_saying_so() {
    let log = AgentLog::fresh("retired");
    let reply = call("GET", &log.path("/events"))
        .token("stasis_v1.admin.0123456789abcdef")
        .send();
    let error = assert_error(&reply, 401, "unauthorized");
    assert_eq!(error.get("reason"), Some(&json!("malformed")));
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("stasis_v1"), "{message}");
}

#[test]
fn a_401_echoes_neither_the_token_nor_its_signature() {
    let log = AgentLog::fresh("no-echo");
    for token in [
        tokens::foreign_token(),
        tokens::unknown_key_token(),
        tokens::expired_token(&log.town),
    ] {
        let reply = call("GET", &log.path("/events")).token(&token).send();
        assert_error(&reply, 401, "unauthorized");
        let text = reply.text();
        let signature = token.rsplit('.').next().unwrap_or_default();
        assert!(
            !text.contains(&token) && !text.contains(signature),
            "{text}"
        );
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer"), "{challenge:?}");
    }
}

#[test]
fn a_container_outlives_its_tokens_lifetime_by_refreshing() {
    let town = Town::fresh("short-ttl");
    let log = AgentLog::new(&town.id, "rig-1", "mayor");
    // Long enough that a loaded server answers well within it (the suite
    // runs its cases at once), short enough to outlive three times over.
    let lifetime = Duration::from_secs(10);
    let parent = mint(&Grant::new(Scope::Town(town.id.clone())), lifetime);
    let first = exchange(&town, &parent, "c-1").ok();
    assert_eq!(lifetime_ms(&first), 10_000);
    let (mut token, mut received) = (token_of(&first), Instant::now());
    let beat = call("POST", &town.path("/heartbeat"))
        .token(&token)
        .json(&json!({"container_id": "c-1"}))
        .send();
    assert_eq!(beat.status, 200, "{}", beat.text());
    let started = Instant::now();
    let mut last_append = Duration::ZERO;
    while started.elapsed() < lifetime * 3 {
        // Refresh once half the lifetime has passed, as stasis-client does.
        if received.elapsed() >= lifetime / 2 {
            token = token_of(&refresh(&token).ok());
            received = Instant::now();
        }
        let append = call("POST", &log.path("/events"))
            .token(&token)
            .json(&json!({"events": [{"type": "tick"}]}))
            .send();
        assert_eq!(
            append.status,
            200,
            "after {:?}: {}",
            started.elapsed(),
            append.text()
        );
        last_append = started.elapsed();
        std::thread::sleep(Duration::from_millis(250));
    }
    // However slow the server, the appends went on past two of the
    // tokens' lifetimes: no token lasted that long, the refreshes did.
    assert!(
        last_append > lifetime * 2,
        "the last append came {last_append:?} after the start"
    );
    for (what, old) in [
        ("the town token", parent),
        ("the first container token", token_of(&first)),
    ] {
        let reply = call("GET", &log.path("/events")).token(&old).send();
        let error = assert_error(&reply, 401, "unauthorized");
        assert_eq!(error.get("reason"), Some(&json!("expired")), "{what}");
    }
}

/// A refresh carries the issue time of the token its line started from, and
/// never extends the line past its absolute lifetime (30 days).
#[test]
fn a_refresh_never_extends_a_line_of_tokens_past_its_absolute_lifetime() {
    use stasis_api::auth::ABSOLUTE_LIFETIME;
    let town = Town::fresh("absolute-lifetime");
    let grant = Grant::new(Scope::Town(town.id.clone()));
    let now = tokens::now_secs();
    let absolute = ABSOLUTE_LIFETIME.as_secs();

    // A line with a minute left: the refresh is cut to that minute, and
    // carries the line's start.
    let started = now + 60 - absolute;
    let near_end = tokens::mint_descendant(&grant, HOUR, started);
    let issued = refresh(&near_end).ok();
    let lifetime = lifetime_ms(&issued);
    assert!(
        (1..=61_000).contains(&lifetime),
        "cut to the line's end: {lifetime} ms"
    );
    let verified = stasis_conformance::target()
        .keys
        .verify(&token_of(&issued), now)
        .unwrap_or_else(|err| panic!("the refreshed token verifies: {err:?}"));
    assert_eq!(verified.origin, started, "the line's start is carried");

    // A line past its end: neither refreshed nor exchanged, though the token
    // itself is still valid.
    let ended = tokens::mint_descendant(&grant, HOUR, now - absolute - 1);
    let refused = refresh(&ended);
    let error = assert_error(&refused, 403, "forbidden");
    assert_eq!(error.get("reason"), Some(&json!("absolute_lifetime")));
    let refused = exchange(&town, &ended, "c-1");
    let error = assert_error(&refused, 403, "forbidden");
    assert_eq!(error.get("reason"), Some(&json!("absolute_lifetime")));
    let read = call("GET", &town.path("")).token(&ended).send();
    assert_eq!(read.status, 200, "{}", read.text());
}
