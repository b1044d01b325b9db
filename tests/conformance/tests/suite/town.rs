//! The town: its state, container eviction and heartbeats (draining, and
//! who may clear it), the container registry, the town's own event log and
//! its agents. The rule that matters most: only a container other than the
//! evicting one clears draining, so a late heartbeat from a dying container
//! cannot resume dispatching into it.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Town, assert_keys, assert_not_allowed, kilo_db};
use stasis_conformance::{
    Value, assert_error, assert_message_names, batch, call, events, foreign_token, json, now_ms,
    num, town_token, unique_id,
};

/// A registry's agents: the Mayor and two polecats, with sessions and ports.
fn three_agents() -> Value {
    json!([
        {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "ses-m", "port": 4096},
        {"agent_id": "p1", "rig_id": "rig-1", "role": "polecat", "session_id": "ses-1", "port": 4097},
        {"agent_id": "p2", "rig_id": "rig-1", "role": "polecat", "session_id": "ses-2", "port": 4098},
    ])
}

/// The types of `town`'s events from the first `registry_updated` on.
fn types_from_registry(town: &Town) -> Vec<String> {
    let types = town.event_types();
    let start = types
        .iter()
        .position(|t| t == "registry_updated")
        .unwrap_or_else(|| panic!("a registry_updated event in {types:?}"));
    types[start..].to_vec()
}

#[test]
fn a_town_never_seen_answers_empty() {
    let town = Town::fresh("unseen");
    assert_eq!(
        town.get(),
        json!({
            "town_id": town.id,
            "draining": false,
            "evicting_container_id": null,
            "current_container_id": null,
            "last_heartbeat_at": null,
            "mayor": null,
            "container_alive": false,
        })
    );
    let registry = town.registry();
    assert_eq!(registry["container_id"], Value::Null);
    assert_eq!(registry["agents"], json!([]));
    let page = town.events_reply("").ok();
    assert_keys(
        &page,
        &["events", "next_after", "has_more", "first_seq", "last_seq"],
    );
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["has_more"], json!(false));
    assert_eq!(town.agents(), Vec::<Value>::new());
}

#[test]
fn a_heartbeat_makes_its_container_current() {
    let town = Town::fresh("first-heartbeat");
    let start = now_ms();
    let beat = town.heartbeat("container-a");
    assert_keys(
        &beat,
        &[
            "draining",
            "cleared_drain",
            "registry",
            "pending_dispatches",
        ],
    );
    assert_eq!(beat["draining"], json!(false));
    assert_eq!(beat["cleared_drain"], json!(false));
    assert_eq!(beat["registry"]["agents"], json!([]));
    assert_eq!(beat["pending_dispatches"], json!([]));
    let state = town.get();
    assert_eq!(state["current_container_id"], json!("container-a"));
    assert_eq!(state["draining"], json!(false));
    let at = num(&state, "last_heartbeat_at");
    assert!(
        at + 60_000 >= start && at <= now_ms() + 60_000,
        "ms: {state}"
    );
}

#[test]
fn eviction_sets_draining_and_a_repeat_is_idempotent() {
    let town = Town::fresh("evict");
    town.heartbeat("container-a");
    let first = town
        .evict_reply(&json!({"container_id": "container-a", "reason": "SIGTERM"}))
        .expect_json(202);
    assert_eq!(
        first,
        json!({"draining": true, "evicting_container_id": "container-a", "already_draining": false})
    );
    let state = town.get();
    assert_eq!(state["draining"], json!(true));
    assert_eq!(state["evicting_container_id"], json!("container-a"));
    let second = town.evict("container-a", "SIGTERM");
    assert_eq!(
        second,
        json!({"draining": true, "evicting_container_id": "container-a", "already_draining": true})
    );
    let evictions = town.events_of("container_eviction");
    assert_eq!(evictions.len(), 1, "one container_eviction: {evictions:?}");
    assert_eq!(evictions[0]["data"]["container_id"], json!("container-a"));
    assert_eq!(town.get(), state, "a repeat changes nothing");
}

#[test]
fn eviction_needs_no_reason() {
    let town = Town::fresh("evict-no-reason");
    let reply = town.evict_reply(&json!({"container_id": "container-a"}));
    assert_eq!(reply.expect_json(202)["already_draining"], json!(false));
    assert_eq!(town.get()["draining"], json!(true));
}

#[test]
fn a_late_heartbeat_from_the_evicting_container_does_not_clear() {
    let town = Town::fresh("late-heartbeat");
    town.heartbeat("container-a");
    town.put_registry("container-a", three_agents());
    town.evict("container-a", "SIGTERM");
    let before = town.events();
    let late = town.heartbeat("container-a");
    assert_eq!(late["draining"], json!(true));
    assert_eq!(late["cleared_drain"], json!(false));
    assert_eq!(late["pending_dispatches"], json!([]));
    let state = town.get();
    assert_eq!(state["draining"], json!(true));
    assert_eq!(state["evicting_container_id"], json!("container-a"));
    assert_eq!(town.events(), before, "a late heartbeat records nothing");
}

#[test]
fn a_heartbeat_from_another_container_clears_draining_once() {
    let town = Town::fresh("clear");
    town.heartbeat("container-a");
    town.put_registry("container-a", three_agents());
    town.evict("container-a", "SIGTERM");
    let beat = town.heartbeat("container-b");
    assert_eq!(beat["draining"], json!(false));
    assert_eq!(beat["cleared_drain"], json!(true));
    assert_eq!(beat["registry"]["container_id"], json!("container-a"));
    assert_eq!(beat["registry"]["agents"], three_agents());
    let state = town.get();
    assert_eq!(state["draining"], json!(false));
    assert_eq!(state["evicting_container_id"], Value::Null);
    assert_eq!(state["current_container_id"], json!("container-b"));
    let again = town.heartbeat("container-b");
    assert_eq!(again["draining"], json!(false));
    assert_eq!(again["cleared_drain"], json!(false));
    assert_eq!(again["pending_dispatches"], json!([]));
    let ready = town.events_of("container_ready");
    let from_b: Vec<&Value> = ready
        .iter()
        .filter(|e| e["data"]["container_id"] == json!("container-b"))
        .collect();
    assert_eq!(from_b.len(), 1, "one container_ready for B: {ready:?}");
}

#[test]
fn a_new_eviction_after_clearing_drains_again() {
    let town = Town::fresh("evict-twice");
    town.heartbeat("container-a");
    town.evict("container-a", "deploy");
    town.heartbeat("container-b");
    let again = town.evict("container-b", "deploy");
    assert_eq!(again["already_draining"], json!(false));
    assert_eq!(again["evicting_container_id"], json!("container-b"));
    assert_eq!(town.events_of("container_eviction").len(), 2);
    assert_eq!(town.heartbeat("container-b")["draining"], json!(true));
    assert_eq!(town.heartbeat("container-c")["cleared_drain"], json!(true));
}

#[test]
fn the_town_log_records_each_step_in_order() {
    let town = Town::fresh("town-log");
    town.heartbeat("container-a");
    town.put_registry("container-a", three_agents());
    town.evict("container-a", "SIGTERM");
    town.evict("container-a", "SIGTERM");
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    town.heartbeat("container-b");
    assert_eq!(
        types_from_registry(&town),
        vec!["registry_updated", "container_eviction", "container_ready"]
    );
    let all = town.events();
    let seqs: Vec<u64> = all.iter().map(|e| num(e, "seq")).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "increasing: {seqs:?}");
    for event in &all {
        assert_keys(event, &["seq", "type", "data", "created_at"]);
    }
    let page = town.events_reply("limit=1").ok();
    assert_eq!(events(&page).len(), 1);
    assert_eq!(page["has_more"], json!(true));
    let rest = town
        .events_reply(&format!("after={}", num(&page, "next_after")))
        .ok();
    assert_eq!(events(&rest).len(), all.len() - 1);
    assert_eq!(page["last_seq"], json!(seqs[seqs.len() - 1]));
}

#[test]
fn bad_town_log_parameters_are_invalid_requests() {
    let town = Town::fresh("town-log-params");
    town.heartbeat("container-a");
    for (query, field) in [
        ("after=-1", "after"),
        ("after=x", "after"),
        ("limit=0", "limit"),
        ("limit=10001", "limit"),
        ("limit=many", "limit"),
    ] {
        let reply = town.events_reply(query);
        assert_eq!(reply.status, 400, "query {query:?}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, field);
    }
}

#[test]
fn the_registry_is_replaced_whole_on_each_put() {
    let town = Town::fresh("registry");
    let start = now_ms();
    let stored = town.put_registry("container-a", three_agents());
    assert_eq!(stored["container_id"], json!("container-a"));
    assert_eq!(stored["agents"], three_agents());
    let at = num(&stored, "updated_at");
    assert!(
        at + 60_000 >= start && at <= now_ms() + 60_000,
        "ms: {stored}"
    );
    assert_eq!(town.registry(), stored);
    let smaller = town.put_registry(
        "container-b",
        json!([{"agent_id": "p9", "rig_id": "rig-2", "role": "polecat"}]),
    );
    let registry = town.registry();
    assert_eq!(registry, smaller);
    assert_eq!(registry["container_id"], json!("container-b"));
    let agents = registry["agents"].as_array().cloned().unwrap_or_default();
    assert_eq!(agents.len(), 1, "replaced, not merged: {registry}");
    assert_eq!(agents[0]["agent_id"], json!("p9"));
    assert_eq!(agents[0]["rig_id"], json!("rig-2"));
    assert_eq!(agents[0]["role"], json!("polecat"));
    for optional in ["session_id", "port"] {
        assert!(
            agents[0].get(optional).is_none_or(Value::is_null),
            "{optional} absent or null: {registry}"
        );
    }
    let empty = town.put_registry("container-c", json!([]));
    assert_eq!(empty["agents"], json!([]));
    assert_eq!(town.events_of("registry_updated").len(), 3);
}

#[test]
fn a_malformed_registry_is_refused_and_changes_nothing() {
    let town = Town::fresh("registry-invalid");
    town.heartbeat("container-a");
    town.put_registry("container-a", three_agents());
    let before = town.state();
    let entry = |patch: Value| {
        let mut agent = json!({"agent_id": "a", "rig_id": "r", "role": "polecat"});
        if let (Some(agent), Some(patch)) = (agent.as_object_mut(), patch.as_object()) {
            for (k, v) in patch {
                if v.is_null() {
                    agent.remove(k);
                } else {
                    agent.insert(k.clone(), v.clone());
                }
            }
        }
        json!({"container_id": "container-a", "agents": [agent]})
    };
    let invalid_requests = [
        json!({"agents": []}),
        json!({"container_id": 5, "agents": []}),
        json!({"container_id": "container-a"}),
        json!({"container_id": "container-a", "agents": {}}),
        json!({"container_id": "container-a", "agents": [1]}),
        json!([]),
        entry(json!({"agent_id": null})),
        entry(json!({"rig_id": null})),
        entry(json!({"role": null})),
        entry(json!({"role": 5})),
        entry(json!({"role": ""})),
        entry(json!({"port": "4096"})),
        entry(json!({"port": -1})),
        entry(json!({"port": 65536})),
        entry(json!({"port": 1.5})),
        entry(json!({"session_id": 7})),
    ];
    for body in invalid_requests {
        let reply = town.put_registry_reply(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_request");
    }
    for body in [
        entry(json!({"agent_id": "a b"})),
        entry(json!({"rig_id": "r/s"})),
        entry(json!({"session_id": "s~1"})),
    ] {
        let reply = town.put_registry_reply(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_id");
    }
    let malformed = call("PUT", &town.path("/container-registry"))
        .header("Content-Type", "application/json")
        .body("{\"container_id\": ")
        .send();
    assert_error(&malformed, 400, "invalid_json");
    town.assert_unchanged(&before);
}

#[test]
fn malformed_eviction_and_heartbeat_bodies_are_refused_and_change_nothing() {
    let town = Town::fresh("bodies-invalid");
    town.heartbeat("container-a");
    let before = town.state();
    // An empty body, `{}` or a null container_id evict the current
    // container (see retries.rs); these are malformed.
    for body in [
        json!({"container_id": 5}),
        json!({"container_id": "container-a", "reason": 5}),
        json!({"container": "container-a"}),
        json!(["container-a"]),
    ] {
        let reply = town.evict_reply(&body);
        assert_eq!(reply.status, 400, "eviction {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_request");
    }
    for body in [
        json!({}),
        json!({"container_id": 5}),
        json!({"container_id": ["container-b"]}),
        json!("container-b"),
    ] {
        let reply = town.heartbeat_reply(&body);
        assert_eq!(reply.status, 400, "heartbeat {body}: {}", reply.text());
        assert_error(&reply, 400, "invalid_request");
    }
    for path in ["/container-eviction", "/heartbeat"] {
        let reply = call("POST", &town.path(path))
            .header("Content-Type", "application/json")
            .body("{\"container_id\"")
            .send();
        assert_error(&reply, 400, "invalid_json");
        let typed = call("POST", &town.path(path))
            .header("Content-Type", "text/plain")
            .body(json!({"container_id": "container-b"}).to_string())
            .send();
        assert_error(&typed, 415, "unsupported_media_type");
    }
    town.assert_unchanged(&before);
}

#[test]
fn the_town_lists_its_registered_agents() {
    let town = Town::fresh("town-agents");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    mayor.log.append(batch("x", 3));
    let polecat = town.agent("rig-1", "p1");
    polecat.register("polecat");
    let stored = polecat.put_snapshot(&kilo_db(1024, 3), 0);
    let agents = town.agents();
    assert_eq!(agents.len(), 2, "{agents:?}");
    for agent in &agents {
        assert_keys(
            agent,
            &["rig_id", "agent_id", "role", "last_seq", "snapshot"],
        );
    }
    assert_eq!(agents[0]["agent_id"], json!("mayor"));
    assert_eq!(agents[0]["role"], json!("mayor"));
    assert_eq!(agents[0]["last_seq"], json!(3));
    assert_eq!(agents[0]["snapshot"], Value::Null);
    assert_eq!(agents[1]["agent_id"], json!("p1"));
    assert_eq!(agents[1]["rig_id"], json!("rig-1"));
    assert_eq!(agents[1]["snapshot"]["sha256"], stored["sha256"]);
    assert_eq!(agents[1]["snapshot"]["version"], stored["version"]);
    assert_eq!(
        town.get()["mayor"],
        json!({"rig_id": "hq", "agent_id": "mayor"})
    );
}

#[test]
fn other_methods_are_not_allowed() {
    let town = Town::fresh("town-methods");
    town.heartbeat("container-a");
    let before = town.state();
    let cases: [(&str, &str, &[&str]); 9] = [
        ("POST", "", &["GET"]),
        ("DELETE", "", &["GET"]),
        ("GET", "/container-eviction", &["POST"]),
        ("PUT", "/heartbeat", &["POST"]),
        ("POST", "/container-registry", &["GET", "PUT"]),
        ("DELETE", "/container-registry", &["GET", "PUT"]),
        ("POST", "/events", &["GET"]),
        ("POST", "/agents", &["GET"]),
        ("GET", "/mayor/message", &["POST"]),
    ];
    for (method, suffix, allowed) in cases {
        let reply = call(method, &town.path(suffix))
            .json(&json!({"container_id": "container-x"}))
            .send();
        assert_not_allowed(&reply, allowed);
    }
    town.assert_unchanged(&before);
}

#[test]
fn an_invalid_town_id_is_refused() {
    for bad in ["a%20b".to_owned(), "a~b".to_owned(), "t".repeat(129)] {
        let heartbeat = call("POST", &format!("/api/towns/{bad}/heartbeat"))
            .json(&json!({"container_id": "container-a"}))
            .send();
        assert_error(&heartbeat, 400, "invalid_id");
        assert_error(
            &call("GET", &format!("/api/towns/{bad}")).send(),
            400,
            "invalid_id",
        );
    }
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let town = Town::fresh("town-auth");
    town.heartbeat("container-a");
    let before = town.state();
    let eviction = json!({"container_id": "container-a"});
    let foreign = call("POST", &town.path("/container-eviction"))
        .token(&foreign_token())
        .json(&eviction)
        .send();
    assert_error(&foreign, 401, "unauthorized");
    let anonymous = call("POST", &town.path("/heartbeat"))
        .no_token()
        .json(&json!({"container_id": "container-b"}))
        .send();
    assert_error(&anonymous, 401, "unauthorized");
    let elsewhere = town_token(&unique_id("elsewhere"));
    let writes = [
        ("POST", "/container-eviction", eviction.clone()),
        ("POST", "/heartbeat", json!({"container_id": "container-b"})),
        (
            "PUT",
            "/container-registry",
            json!({"container_id": "container-b", "agents": []}),
        ),
        ("POST", "/mayor/message", json!({"text": "hello"})),
    ];
    for (method, suffix, body) in writes {
        let reply = call(method, &town.path(suffix))
            .token(&elsewhere)
            .json(&body)
            .send();
        assert_error(&reply, 403, "forbidden");
    }
    for suffix in ["", "/events", "/agents", "/container-registry"] {
        let reply = call("GET", &town.path(suffix)).token(&elsewhere).send();
        assert_error(&reply, 403, "forbidden");
    }
    town.assert_unchanged(&before);
}

#[test]
fn a_town_token_runs_its_own_town() {
    let town = Town::fresh("town-token");
    let token = town_token(&town.id);
    let beat = call("POST", &town.path("/heartbeat"))
        .token(&token)
        .json(&json!({"container_id": "container-a"}))
        .send();
    assert_eq!(beat.ok()["draining"], json!(false));
    let evict = call("POST", &town.path("/container-eviction"))
        .token(&token)
        .json(&json!({"container_id": "container-a", "reason": "SIGTERM"}))
        .send();
    assert_eq!(evict.expect_json(202)["draining"], json!(true));
    let read = call("GET", &town.path("")).token(&token).send();
    assert_eq!(read.ok()["draining"], json!(true));
}
