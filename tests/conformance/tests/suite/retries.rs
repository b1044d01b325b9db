//! Retrying after a failure: a clearing heartbeat or a Mayor message sent
//! again with the same `Idempotency-Key` has the first attempt's effect only
//! (the released dispatches come back, the message is not appended twice),
//! and Gastown's container, which posts `container-eviction` with an empty
//! body, drains the town for its current container.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Town, user_message};
use stasis_conformance::{Value, assert_error, call, events, json};

fn drained_town_with_a_deferred_message(case: &str) -> Town {
    let town = Town::fresh(case);
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    mayor
        .log
        .append(Value::Array(user_message(Some("ses-m"), "u1", "hello")));
    town.heartbeat("container-a");
    town.evict("container-a", "SIGTERM");
    let deferred = town.mayor_message("while you were away");
    assert_eq!(deferred.status, 202, "{}", deferred.text());
    town
}

fn heartbeat_with_key(town: &Town, container: &str, key: &str) -> Value {
    call("POST", &town.path("/heartbeat"))
        .header("idempotency-key", key)
        .json(&json!({ "container_id": container }))
        .send()
        .ok()
}

fn released_agents(beat: &Value) -> Vec<Value> {
    beat["pending_dispatches"]
        .as_array()
        .unwrap_or_else(|| panic!("pending_dispatches is an array: {beat}"))
        .iter()
        .map(|d| d["agent_id"].clone())
        .collect()
}

#[test]
fn a_clearing_heartbeat_retried_with_its_key_gets_the_same_dispatches() {
    let town = drained_town_with_a_deferred_message("retry-heartbeat");
    let first = heartbeat_with_key(&town, "container-b", "boot-b-1");
    assert_eq!(first["cleared_drain"], json!(true));
    assert_eq!(released_agents(&first), vec![json!("mayor")]);
    let retry = heartbeat_with_key(&town, "container-b", "boot-b-1");
    assert_eq!(released_agents(&retry), vec![json!("mayor")], "{retry}");
    assert_eq!(
        retry["pending_dispatches"][0]["prior_conversation"],
        first["pending_dispatches"][0]["prior_conversation"]
    );
    assert_eq!(retry["cleared_drain"], json!(false));
    let next = heartbeat_with_key(&town, "container-b", "beat-2");
    assert_eq!(
        next["pending_dispatches"],
        json!([]),
        "a new key is a new heartbeat"
    );
    assert_eq!(
        town.heartbeat("container-b")["pending_dispatches"],
        json!([])
    );
    let released = town
        .event_types()
        .iter()
        .filter(|t| *t == "dispatch_agent")
        .count();
    assert_eq!(released, 1, "released once in the town's log");
}

#[test]
fn a_mayor_message_retried_with_its_key_is_appended_and_deferred_once() {
    let town = drained_town_with_a_deferred_message("retry-mayor");
    let mayor = town.agent("hq", "mayor");
    let send = || {
        call("POST", &town.path("/mayor/message"))
            .header("idempotency-key", "msg-42")
            .json(&json!({"text": "are the polecats done?"}))
            .send()
    };
    let first = send();
    assert_eq!(first.status, 202, "{}", first.text());
    let events_after_first = events(&mayor.log.read("")).len();
    let retry = send();
    assert_eq!(retry.status, 202, "{}", retry.text());
    assert_eq!(retry.json(), json!({"action": "deferred"}));
    assert_eq!(
        events(&mayor.log.read("")).len(),
        events_after_first,
        "the retry appended nothing"
    );
    let types = town.event_types();
    let count = |wanted: &str| types.iter().filter(|t| *t == wanted).count();
    assert_eq!(
        count("mayor_message"),
        2,
        "two distinct messages, one retry"
    );
    assert_eq!(count("dispatch_deferred"), 2);

    let beat = town.heartbeat("container-b");
    let turns = beat["pending_dispatches"][0]["prior_conversation"]["turns"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let asked = turns
        .iter()
        .filter(|t| t["content"] == json!("are the polecats done?"))
        .count();
    assert_eq!(
        asked, 1,
        "the message is in the conversation once: {turns:?}"
    );
}

#[test]
fn an_idempotency_key_must_be_visible_ascii() {
    let town = Town::fresh("retry-bad-key");
    let reply = call("POST", &town.path("/heartbeat"))
        .header("idempotency-key", &"k".repeat(256))
        .json(&json!({"container_id": "c"}))
        .send();
    assert_error(&reply, 400, "invalid_request");
    assert_eq!(town.get()["current_container_id"], Value::Null);
}

#[test]
fn an_eviction_with_an_empty_body_drains_the_town_for_its_current_container() {
    let town = Town::fresh("empty-eviction");
    let refused = call("POST", &town.path("/container-eviction")).send();
    assert_error(&refused, 409, "no_current_container");
    assert_eq!(town.get()["draining"], json!(false));

    town.heartbeat("container-a");
    let evicted = call("POST", &town.path("/container-eviction")).send();
    assert_eq!(evicted.status, 202, "{}", evicted.text());
    assert_eq!(
        evicted.json()["evicting_container_id"],
        json!("container-a")
    );
    let state = town.get();
    assert_eq!(state["draining"], json!(true));
    assert_eq!(state["evicting_container_id"], json!("container-a"));
    let again = call("POST", &town.path("/container-eviction"))
        .header("content-type", "application/json")
        .body(b"{}".to_vec())
        .send();
    assert_eq!(again.status, 202);
    assert_eq!(again.json()["already_draining"], json!(true));
    let late = town.heartbeat("container-a");
    assert_eq!(
        late["draining"],
        json!(true),
        "a's late heartbeat ends nothing"
    );
}
