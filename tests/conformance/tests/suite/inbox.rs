//! Any agent's inbox (`POST /rigs/{rig}/agents/{agent}/inbox`) and one
//! agent's entry of the process registry
//! (`PUT|DELETE /container-registry/agents/{rig}/{agent}`), which one
//! supervisor per agent writes without clobbering the others'.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::tokens::container_token;
use stasis_conformance::town::{Agent, Town, turn, turns};
use stasis_conformance::{Reply, Value, assert_error, call, events, json};

fn inbox(agent: &Agent, text: &str, key: Option<&str>) -> Reply {
    let request = call("POST", &agent.path("/inbox")).json(&json!({ "text": text }));
    match key {
        Some(key) => request.header("Idempotency-Key", key).send(),
        None => request.send(),
    }
}

fn last_event(agent: &Agent) -> Value {
    events(&agent.log.read(""))
        .last()
        .cloned()
        .unwrap_or(Value::Null)
}

fn entry(town: &Town, rig: &str, agent: &str, body: &Value) -> Reply {
    let path = town.path(&format!("/container-registry/agents/{rig}/{agent}"));
    call("PUT", &path).json(body).send()
}

fn remove_entry(town: &Town, rig: &str, agent: &str) -> Reply {
    let path = town.path(&format!("/container-registry/agents/{rig}/{agent}"));
    call("DELETE", &path).send()
}

/// `(rig_id, agent_id, session_id)` of each registry entry, in order.
fn listed(registry: &Value) -> Vec<(String, String, Value)> {
    registry["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("a registry: {registry}"))
        .iter()
        .map(|a| {
            let text = |f: &str| a[f].as_str().unwrap_or_default().to_owned();
            (text("rig_id"), text("agent_id"), a["session_id"].clone())
        })
        .collect()
}

#[test]
fn a_polecats_inbox_persists_the_message_and_routes_it() {
    let town = Town::fresh("inbox");
    let polecat = town.agent("rig-1", "p1");
    polecat.register("polecat");

    let first = inbox(&polecat, "Rebase on main, please.", Some("k-1")).ok();
    assert_eq!(first["action"], json!("redispatch"), "{first}");
    assert_eq!(first["dispatch"]["agent_id"], json!("p1"));
    assert_eq!(first["dispatch"]["role"], json!("polecat"));
    assert_eq!(
        turns(&first["dispatch"]["prior_conversation"]).last(),
        Some(&turn("user", "Rebase on main, please."))
    );
    let stored = last_event(&polecat);
    assert_eq!(stored["type"], json!("message.completed"), "{stored}");
    assert_eq!(stored["data"]["info"]["role"], json!("user"));
    assert_eq!(
        stored["data"]["part"]["text"],
        json!("Rebase on main, please.")
    );
    let seq = stored["seq"].clone();

    // A retry with the same key appends nothing and routes the same way.
    let retry = inbox(&polecat, "Rebase on main, please.", Some("k-1")).ok();
    assert_eq!(retry["action"], json!("redispatch"));
    assert_eq!(last_event(&polecat)["seq"], seq);
    assert_eq!(town.events_of("agent_message").len(), 1);
    assert_eq!(town.events_of("mayor_message").len(), 0);
    assert_eq!(town.events_of("dispatch_agent").len(), 1);

    // A live session in the live current container gets it.
    town.heartbeat("c-a");
    town.put_registry(
        "c-a",
        json!([{"agent_id": "p1", "rig_id": "rig-1", "role": "polecat", "session_id": "ses-p", "port": 4100}]),
    );
    let live = inbox(&polecat, "And run the tests.", None).ok();
    assert_eq!(
        live,
        json!({"action": "deliver", "session_id": "ses-p", "container_id": "c-a"})
    );
    assert_eq!(last_event(&polecat)["session_id"], json!("ses-p"));

    // While the town drains the dispatch waits for the next container.
    town.evict("c-a", "SIGTERM");
    let deferred = inbox(&polecat, "Then push.", None).expect_json(202);
    assert_eq!(deferred, json!({"action": "deferred"}));
    let released = town.heartbeat("c-b");
    let pending = released["pending_dispatches"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(pending.len(), 1, "{released}");
    assert_eq!(pending[0]["agent_id"], json!("p1"));
    assert_eq!(
        turns(&pending[0]["prior_conversation"]).last(),
        Some(&turn("user", "Then push."))
    );
}

#[test]
fn an_unregistered_agents_inbox_is_not_found_and_writes_nothing() {
    let town = Town::fresh("inbox-404");
    let stranger = town.agent("rig-1", "nobody");
    let before = town.state();
    let reply = inbox(&stranger, "hello", None);
    assert_error(&reply, 404, "agent_not_found");
    town.assert_unchanged(&before);
    assert_eq!(events(&stranger.log.read("")), Vec::<Value>::new());
    assert_error(&inbox(&stranger, " ", None), 400, "invalid_request");
}

#[test]
fn one_agents_registry_entry_keeps_the_others() {
    let town = Town::fresh("registry-entry");
    town.heartbeat("c-a");
    town.put_registry(
        "c-a",
        json!([
            {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "ses-m", "port": 4096},
            {"agent_id": "p1", "rig_id": "rig-1", "role": "polecat", "session_id": "ses-1", "port": 4101},
        ]),
    );
    let added = entry(
        &town,
        "rig-1",
        "p2",
        &json!({"container_id": "c-a", "role": "polecat", "session_id": "ses-2", "port": 4102}),
    )
    .ok();
    assert_eq!(
        listed(&added),
        vec![
            ("hq".into(), "mayor".into(), json!("ses-m")),
            ("rig-1".into(), "p1".into(), json!("ses-1")),
            ("rig-1".into(), "p2".into(), json!("ses-2")),
        ]
    );
    let updated = entry(
        &town,
        "rig-1",
        "p1",
        &json!({"container_id": "c-a", "role": "polecat", "session_id": "ses-1b"}),
    )
    .ok();
    assert_eq!(updated["agents"][1]["session_id"], json!("ses-1b"));
    assert_eq!(updated["agents"][1]["port"], Value::Null);
    assert_eq!(updated["agents"][2]["session_id"], json!("ses-2"));
    assert_eq!(town.registry(), updated);

    // Another container's entry moves the registry; the others stay listed
    // without the old container's sessions.
    town.heartbeat("c-b");
    let moved = entry(
        &town,
        "hq",
        "mayor",
        &json!({"container_id": "c-b", "role": "mayor", "session_id": "ses-m2", "port": 5096}),
    )
    .ok();
    assert_eq!(moved["container_id"], json!("c-b"));
    assert_eq!(
        listed(&moved),
        vec![
            ("hq".into(), "mayor".into(), json!("ses-m2")),
            ("rig-1".into(), "p1".into(), Value::Null),
            ("rig-1".into(), "p2".into(), Value::Null),
        ]
    );

    let removed = remove_entry(&town, "rig-1", "p2").ok();
    assert_eq!(listed(&removed).len(), 2);
    let updates = town.events_of("registry_updated").len();
    assert_eq!(remove_entry(&town, "rig-1", "p2").ok(), removed);
    assert_eq!(
        town.events_of("registry_updated").len(),
        updates,
        "removing an entry not listed records nothing"
    );
}

#[test]
fn a_registry_entry_is_fenced_like_the_whole_registry() {
    let town = Town::fresh("registry-entry-fenced");
    let (a, b) = (
        container_token(&town.id, "c-a"),
        container_token(&town.id, "c-b"),
    );
    for (token, id) in [(&a, "c-a"), (&b, "c-b")] {
        call("POST", &town.path("/heartbeat"))
            .token(token)
            .json(&json!({"container_id": id}))
            .send()
            .ok();
    }
    let path = town.path("/container-registry/agents/rig-1/p1");
    let body = |id: &str| json!({"container_id": id, "role": "polecat"});
    let before = town.state();
    let zombie = call("PUT", &path).token(&a).json(&body("c-a")).send();
    assert_error(&zombie, 409, "container_fenced");
    let zombie_delete = call("DELETE", &path).token(&a).send();
    assert_error(&zombie_delete, 409, "container_fenced");
    let other = call("PUT", &path).token(&b).json(&body("c-a")).send();
    let refused = assert_error(&other, 403, "forbidden");
    assert_eq!(refused["reason"], json!("other_container"));
    town.assert_unchanged(&before);
    let own = call("PUT", &path).token(&b).json(&body("c-b")).send().ok();
    assert_eq!(own["container_id"], json!("c-b"));
}
