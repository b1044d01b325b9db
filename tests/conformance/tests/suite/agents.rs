//! The agent record: `PUT` registers or updates an agent with its role and
//! metadata, `GET` reads it with its log's counters, its snapshot and
//! whether it has a checkpoint, `DELETE` destroys everything the agent has.
//! A town has at most one mayor. A refused request changes nothing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Agent, Town, assert_keys, assert_not_allowed, kilo_db};
use stasis_conformance::{
    Value, assert_error, assert_message_names, batch, call, foreign_token, json, now_ms, num,
    town_token, unique_id,
};

const RECORD_FIELDS: [&str; 12] = [
    "town_id",
    "rig_id",
    "agent_id",
    "role",
    "metadata",
    "created_at",
    "updated_at",
    "last_seq",
    "event_count",
    "snapshot",
    "has_checkpoint",
    "workspace",
];

#[test]
fn registering_creates_the_record_with_201_and_get_reads_it_back() {
    let agent = Agent::fresh("register");
    let start = now_ms();
    let reply = agent.register_reply(&json!({"role": "polecat", "metadata": {"model": "m-1"}}));
    let created = reply.expect_json(201);
    let end = now_ms();
    assert_keys(&created, &RECORD_FIELDS);
    assert_eq!(created["town_id"], json!(agent.log.town));
    assert_eq!(created["rig_id"], json!("rig-1"));
    assert_eq!(created["agent_id"], json!("agent-1"));
    assert_eq!(created["role"], json!("polecat"));
    assert_eq!(created["metadata"], json!({"model": "m-1"}));
    assert_eq!(created["last_seq"], json!(0));
    assert_eq!(created["event_count"], json!(0));
    assert_eq!(created["snapshot"], Value::Null);
    assert_eq!(created["has_checkpoint"], json!(false));
    assert_eq!(created["workspace"], Value::Null);
    let at = num(&created, "created_at");
    assert!(
        at + 60_000 >= start && at <= end + 60_000,
        "created_at in ms: {created}"
    );
    assert_eq!(created["updated_at"], created["created_at"]);
    assert_eq!(agent.record(), created, "GET reads what PUT answered");
}

#[test]
fn registering_again_updates_role_and_metadata_with_200() {
    let agent = Agent::fresh("re-register");
    let first = agent
        .register_reply(&json!({"role": "polecat", "metadata": [1]}))
        .expect_json(201);
    let second = agent
        .register_reply(&json!({"role": "refinery", "metadata": {"v": 2}}))
        .expect_json(200);
    assert_eq!(second["role"], json!("refinery"));
    assert_eq!(second["metadata"], json!({"v": 2}));
    assert_eq!(second["created_at"], first["created_at"], "created once");
    assert!(num(&second, "updated_at") >= num(&first, "updated_at"));
    assert_eq!(agent.record(), second);
}

#[test]
fn metadata_is_optional_and_reads_back_as_null() {
    let agent = Agent::fresh("no-metadata");
    let record = agent.register("any-role-at-all");
    assert_eq!(record["metadata"], Value::Null);
    assert_eq!(record["role"], json!("any-role-at-all"));
}

#[test]
fn the_record_counts_events_written_before_and_after_registration() {
    let agent = Agent::fresh("counters");
    agent.log.append(batch("before", 3));
    let record = agent.register("polecat");
    assert_eq!(record["last_seq"], json!(3));
    assert_eq!(record["event_count"], json!(3));
    agent.log.append(batch("after", 2));
    let record = agent.record();
    assert_eq!(record["last_seq"], json!(5));
    assert_eq!(record["event_count"], json!(5));
}

#[test]
fn the_record_shows_the_checkpoint_and_the_snapshot() {
    let agent = Agent::fresh("record-state");
    agent.register("polecat");
    agent.put_checkpoint(&json!({"step": 1}));
    let db = kilo_db(4096, 1);
    let stored = agent.put_snapshot(&db, 0);
    let record = agent.record();
    assert_eq!(record["has_checkpoint"], json!(true));
    let snapshot = &record["snapshot"];
    for field in ["version", "sha256", "size", "storage", "event_watermark"] {
        assert_eq!(
            snapshot[field], stored[field],
            "snapshot.{field} in {record}"
        );
    }
}

#[test]
fn an_agent_never_registered_is_not_found_even_with_events() {
    let agent = Agent::fresh("unregistered");
    assert_error(&agent.record_reply(), 404, "agent_not_found");
    agent.log.append(batch("x", 2));
    assert_error(&agent.record_reply(), 404, "agent_not_found");
}

#[test]
fn delete_destroys_everything_the_agent_has() {
    let agent = Agent::fresh("destroy");
    agent.register("polecat");
    agent
        .log
        .append(json!([{"type": "a", "session_id": "s1"}, {"type": "b"}]));
    agent.put_checkpoint(&json!({"step": 3}));
    agent.put_memory("notes", &json!("remember"));
    agent.put_snapshot(&kilo_db(2048, 2), 2);
    let sibling = agent.sibling("agent-2");
    sibling.register("refinery");
    let reply = call("DELETE", &agent.path("")).send();
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_error(&agent.record_reply(), 404, "agent_not_found");
    assert_eq!(agent.log.read("")["events"], json!([]));
    assert_eq!(agent.log.sessions(), json!({"sessions": []}));
    assert_error(&agent.checkpoint_reply(), 404, "checkpoint_not_found");
    assert_error(&agent.memory_reply("notes"), 404, "memory_not_found");
    assert_error(&agent.snapshot_reply(), 404, "snapshot_not_found");
    let listed: Vec<Value> = agent
        .town()
        .agents()
        .iter()
        .map(|a| a["agent_id"].clone())
        .collect();
    assert_eq!(
        listed,
        vec![json!("agent-2")],
        "the agent leaves the town's list"
    );
    assert_eq!(sibling.record()["role"], json!("refinery"), "siblings stay");
}

#[test]
fn deleting_an_unknown_agent_is_not_found() {
    let agent = Agent::fresh("delete-unknown");
    let reply = call("DELETE", &agent.path("")).send();
    assert_error(&reply, 404, "agent_not_found");
}

#[test]
fn a_second_mayor_is_refused_and_changes_nothing() {
    let town = Town::fresh("second-mayor");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    let rival = town.agent("rig-2", "rival");
    let before = rival.state();
    let town_before = town.state();
    let reply = rival.register_reply(&json!({"role": "mayor"}));
    assert_error(&reply, 409, "mayor_exists");
    rival.assert_unchanged(&before);
    town.assert_unchanged(&town_before);
    assert_eq!(
        town.get()["mayor"],
        json!({"rig_id": "hq", "agent_id": "mayor"})
    );
}

#[test]
fn an_existing_agent_promoted_to_a_second_mayor_keeps_its_role() {
    let town = Town::fresh("promote-mayor");
    town.agent("hq", "mayor").register("mayor");
    let polecat = town.agent("hq", "polecat");
    polecat.register("polecat");
    let before = polecat.state();
    let reply = polecat.register_reply(&json!({"role": "mayor", "metadata": {"x": 1}}));
    assert_error(&reply, 409, "mayor_exists");
    polecat.assert_unchanged(&before);
}

#[test]
fn the_mayor_may_register_again_as_mayor() {
    let town = Town::fresh("mayor-again");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    let again = mayor.register_reply(&json!({"role": "mayor", "metadata": {"v": 2}}));
    assert_eq!(again.ok()["metadata"], json!({"v": 2}));
}

#[test]
fn once_the_mayor_is_gone_or_demoted_another_agent_may_be_mayor() {
    let town = Town::fresh("mayor-succession");
    let first = town.agent("hq", "first");
    first.register("mayor");
    first.register("polecat");
    let second = town.agent("hq", "second");
    assert_eq!(second.register("mayor")["role"], json!("mayor"));
    assert_eq!(
        town.get()["mayor"],
        json!({"rig_id": "hq", "agent_id": "second"})
    );
    assert_eq!(call("DELETE", &second.path("")).send().status, 204);
    assert_eq!(town.get()["mayor"], Value::Null);
    assert_eq!(first.register("mayor")["role"], json!("mayor"));
}

#[test]
fn a_role_must_be_a_string_of_1_to_128_bytes() {
    let agent = Agent::fresh("bad-role");
    agent.register("polecat");
    let before = agent.state();
    let bodies = [
        json!({}),
        json!({"role": ""}),
        json!({"role": 5}),
        json!({"role": null}),
        json!({"role": ["mayor"]}),
        json!({"role": "r".repeat(129)}),
        json!({"metadata": {}}),
    ];
    for body in bodies {
        let reply = agent.register_reply(&body);
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "role");
    }
    agent.assert_unchanged(&before);
    let long = "r".repeat(128);
    assert_eq!(agent.register(&long)["role"], json!(long));
}

/// The town's agent list is written before the agent's own record, so a
/// registration its record would refuse must be refused before either.
#[test]
fn a_new_agent_refused_for_its_metadata_is_not_in_the_town() {
    let town = Town::fresh("record-bad-metadata");
    let agent = town.agent("rig-1", "newcomer");
    // Metadata 67 deep (past the 64 a stored value may have) in a body 68 deep,
    // within the 72 a whole body may have: only the record's own check sees it.
    let deep = format!("{}{}", "[".repeat(66), "]".repeat(66));
    let bodies = [
        format!(r#"{{"role":"polecat","metadata":{{"deep":{deep}}}}}"#),
        r#"{"role":"polecat","metadata":{"x":1e999}}"#.to_owned(),
        r#"{"role":"mayor","metadata":"\ud800"}"#.to_owned(),
    ];
    for body in bodies {
        let reply = call("PUT", &agent.path(""))
            .header("Content-Type", "application/json")
            .body(body.clone())
            .send();
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "metadata");
        assert_eq!(town.agents(), Vec::<Value>::new(), "after {body}");
        assert_error(&agent.record_reply(), 404, "agent_not_found");
    }
    assert_eq!(agent.register("mayor")["role"], json!("mayor"));
}

#[test]
fn a_body_that_is_not_an_object_is_an_invalid_request() {
    let agent = Agent::fresh("record-not-object");
    let before = agent.state();
    for body in [json!(["polecat"]), json!("polecat"), json!(null), json!(3)] {
        let reply = agent.register_reply(&body);
        assert_error(&reply, 400, "invalid_request");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let agent = Agent::fresh("record-malformed");
    agent.register("polecat");
    let before = agent.state();
    for body in ["{\"role\": ", "", "role=mayor", "{\"role\": \"a\"}}"] {
        let reply = call("PUT", &agent.path(""))
            .header("Content-Type", "application/json")
            .body(body)
            .send();
        assert_eq!(reply.status, 400, "body {body:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_json");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn a_content_type_other_than_json_is_unsupported() {
    let agent = Agent::fresh("record-type");
    let before = agent.state();
    let reply = call("PUT", &agent.path(""))
        .header("Content-Type", "text/plain")
        .body(json!({"role": "polecat"}).to_string())
        .send();
    assert_error(&reply, 415, "unsupported_media_type");
    agent.assert_unchanged(&before);
}

#[test]
fn invalid_ids_in_the_path_are_refused() {
    let town = Town::fresh("record-ids");
    for (rig, agent) in [
        ("rig-1", "a%20b".to_owned()),
        ("rig-1", "a~b".to_owned()),
        ("rig-1", "a".repeat(129)),
        ("r%2Fs", "agent".to_owned()),
    ] {
        let path = format!("/api/towns/{}/rigs/{rig}/agents/{agent}", town.id);
        let reply = call("PUT", &path).json(&json!({"role": "polecat"})).send();
        assert_error(&reply, 400, "invalid_id");
        assert_error(&call("GET", &path).send(), 400, "invalid_id");
    }
    assert_eq!(town.agents(), Vec::<Value>::new());
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("record-methods");
    agent.register("polecat");
    let before = agent.state();
    for method in ["POST", "PATCH"] {
        let reply = call(method, &agent.path(""))
            .json(&json!({"role": "mayor"}))
            .send();
        assert_not_allowed(&reply, &["GET", "PUT", "DELETE"]);
    }
    agent.assert_unchanged(&before);
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let agent = Agent::fresh("record-auth");
    agent.register("polecat");
    let before = agent.state();
    let body = json!({"role": "mayor"});
    let put = |token: &str| call("PUT", &agent.path("")).token(token).json(&body).send();
    assert_error(&put(&foreign_token()), 401, "unauthorized");
    assert_error(
        &call("PUT", &agent.path("")).no_token().json(&body).send(),
        401,
        "unauthorized",
    );
    let elsewhere = town_token(&unique_id("elsewhere"));
    assert_error(&put(&elsewhere), 403, "forbidden");
    let delete = call("DELETE", &agent.path("")).token(&elsewhere).send();
    assert_error(&delete, 403, "forbidden");
    let read = call("GET", &agent.path("")).token(&elsewhere).send();
    assert_error(&read, 403, "forbidden");
    agent.assert_unchanged(&before);
}

#[test]
fn a_town_token_manages_its_own_agents() {
    let agent = Agent::fresh("record-town-token");
    let token = town_token(&agent.log.town);
    let put = call("PUT", &agent.path(""))
        .token(&token)
        .json(&json!({"role": "polecat"}))
        .send();
    assert_eq!(put.expect_json(201)["role"], json!("polecat"));
    let read = call("GET", &agent.path("")).token(&token).send();
    assert_eq!(read.ok()["role"], json!("polecat"));
    let delete = call("DELETE", &agent.path("")).token(&token).send();
    assert_eq!(delete.status, 204, "{}", delete.text());
}
