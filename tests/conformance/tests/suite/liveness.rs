//! Liveness: stasis tells a live container from a dead one by its
//! heartbeats. A message is delivered into a session only while the
//! current container heartbeat within the liveness timeout (the servers'
//! `STASIS_LIVENESS_TIMEOUT_SECS`, which `scripts/test` sets short); a dead
//! container's session gets a `redispatch`. A fenced heartbeat (a
//! superseded or an evicted container's) changes nothing in the town, its
//! `last_heartbeat_at` included, so a zombie never makes a dead town look
//! alive.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use std::time::{Duration, Instant};

use stasis_conformance::tokens::container_token;
use stasis_conformance::town::{Town, turn, turns, user_message};
use stasis_conformance::{Value, call, json};

/// The servers' liveness timeout, as `scripts/test` gives it to them and to
/// this suite (60 s, the default, when unset).
fn liveness_timeout() -> Duration {
    let secs = std::env::var("STASIS_LIVENESS_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// Waits until the town shows its container dead, at most the timeout and
/// 15 s more.
fn wait_until_dead(town: &Town) {
    let deadline = Instant::now() + liveness_timeout() + Duration::from_secs(15);
    loop {
        let state = town.get();
        if state["container_alive"] == json!(false) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the container never counted as dead: {state}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn a_message_for_a_dead_containers_session_is_redispatched() {
    let town = Town::fresh("dead-container");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    mayor
        .log
        .append(Value::Array(user_message(Some("ses-m"), "u1", "Hello?")));
    town.heartbeat("container-a");
    let entry = json!([{"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "ses-m", "port": 4096}]);
    town.put_registry("container-a", entry);
    assert_eq!(town.get()["container_alive"], json!(true));
    let live = town.mayor_message("While you live.").ok();
    assert_eq!(live["action"], json!("deliver"), "{live}");

    wait_until_dead(&town);
    let dead = town.mayor_message("Anyone there?").ok();
    assert_eq!(dead["action"], json!("redispatch"), "{dead}");
    let dispatch = &dead["dispatch"];
    assert_eq!(dispatch["agent_id"], json!("mayor"));
    assert_eq!(
        turns(&dispatch["prior_conversation"]).last(),
        Some(&turn("user", "Anyone there?"))
    );
    let reasons: Vec<Value> = town
        .events_of("dispatch_agent")
        .iter()
        .map(|e| e["data"]["reason"].clone())
        .collect();
    assert_eq!(reasons, vec![json!("mayor_message")]);

    // The container heartbeats again: alive, and the session gets messages.
    town.heartbeat("container-a");
    assert_eq!(town.get()["container_alive"], json!(true));
    let again = town.mayor_message("Welcome back.").ok();
    assert_eq!(
        again,
        json!({"action": "deliver", "session_id": "ses-m", "container_id": "container-a"})
    );
}

#[test]
fn a_fenced_heartbeat_changes_nothing_in_the_town() {
    let town = Town::fresh("fenced-beat");
    let (a, b) = (
        container_token(&town.id, "c-a"),
        container_token(&town.id, "c-b"),
    );
    let beat = |token: &str, id: &str| {
        call("POST", &town.path("/heartbeat"))
            .token(token)
            .json(&json!({"container_id": id}))
            .send()
            .ok()
    };
    beat(&a, "c-a");
    beat(&b, "c-b");
    let before = town.get();
    std::thread::sleep(Duration::from_millis(20));
    let late = beat(&a, "c-a");
    assert_eq!(late["fenced"], json!(true), "{late}");
    assert_eq!(town.get(), before, "a superseded container's heartbeat");

    let evicted = call("POST", &town.path("/container-eviction"))
        .token(&b)
        .json(&json!({}))
        .send();
    assert_eq!(evicted.status, 202, "{}", evicted.text());
    let draining = town.get();
    std::thread::sleep(Duration::from_millis(20));
    beat(&b, "c-b");
    assert_eq!(town.get(), draining, "the evicted container's heartbeat");
}
