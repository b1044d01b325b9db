//! Export and import: `GET /export` is a manifest of everything an agent
//! has (record, sessions, events, checkpoint, memory, snapshot as base64);
//! `PUT /import` replaces the agent's state with a manifest and never
//! merges, so `{}` resets it. A malformed manifest is refused with
//! `invalid_manifest` and changes nothing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{
    Agent, Town, assert_keys, assert_not_allowed, kilo_db, sha256_hex, streamed, user_message,
};
use stasis_conformance::{
    Value, assert_error, call, events, foreign_token, json, num, town_token, unique_id,
};

const MANIFEST_FIELDS: [&str; 9] = [
    "format",
    "agent",
    "sessions",
    "events",
    "checkpoint",
    "memory",
    "snapshot",
    "workspace",
    "workspace_chunks",
];

/// The manifest of an agent that has nothing.
fn empty_manifest() -> Value {
    json!({
        "format": "stasis.agent.v1",
        "agent": null,
        "sessions": [],
        "events": [],
        "checkpoint": null,
        "memory": [],
        "snapshot": null,
        "workspace": null,
        "workspace_chunks": [],
    })
}

/// Events [`populate`] appends.
const EVENTS: u64 = 9;

/// A polecat with something of every kind; returns its kilo.db.
fn populate(agent: &Agent) -> Vec<u8> {
    agent
        .register_reply(&json!({"role": "polecat", "metadata": {"bead": "gt-7"}}))
        .expect_json(201);
    let mut all = user_message(Some("s1"), "u1", "Fix the flaky test");
    all.extend(streamed(
        Some("s1"),
        "a1",
        "assistant",
        &["Looking ", "at it."],
    ));
    all.push(json!({"type": "tool.called", "session_id": "s2", "data": {"tool": "bash"}}));
    all.push(json!({"type": "note", "data": [1, "two", null]}));
    let appended = agent.log.append(Value::Array(all));
    assert_eq!(num(&appended, "last_seq"), EVENTS);
    call("PUT", &agent.path("/sessions/s2"))
        .json(&json!({"status": "completed", "metadata": {"exit": 0}}))
        .send()
        .ok();
    agent.put_checkpoint(&json!({"step": 4, "branch": "fix/flaky"}));
    agent.put_memory("plan", &json!(["reproduce", "fix", "verify"]));
    agent.put_memory("repo", &json!("kilo/town"));
    let db = kilo_db(64 * 1024, 11);
    agent.put_snapshot(&db, num(&appended, "last_seq"));
    db
}

/// The sessions without their times, which an import may set anew.
fn sessions_without_times(sessions: &Value) -> Vec<Value> {
    sessions
        .as_array()
        .unwrap_or_else(|| panic!("a sessions array: {sessions}"))
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Some(object) = s.as_object_mut() {
                object.remove("created_at");
                object.remove("updated_at");
            }
            s
        })
        .collect()
}

/// The memory entries as `(key, value)`.
fn memory_pairs(memory: &Value) -> Vec<(Value, Value)> {
    memory
        .as_array()
        .unwrap_or_else(|| panic!("a memory array: {memory}"))
        .iter()
        .map(|m| (m["key"].clone(), m["value"].clone()))
        .collect()
}

#[test]
fn an_export_holds_everything_the_agent_has() {
    let agent = Agent::fresh("export");
    let db = populate(&agent);
    let manifest = agent.export();
    assert_keys(&manifest, &MANIFEST_FIELDS);
    assert_eq!(manifest["format"], json!("stasis.agent.v1"));
    assert_eq!(
        manifest["agent"],
        json!({"role": "polecat", "metadata": {"bead": "gt-7"}})
    );
    assert_eq!(manifest["events"], agent.log.read("")["events"]);
    assert_eq!(manifest["sessions"], agent.log.sessions()["sessions"]);
    assert_eq!(
        manifest["checkpoint"],
        json!({"step": 4, "branch": "fix/flaky"})
    );
    assert_eq!(
        memory_pairs(&manifest["memory"]),
        vec![
            (json!("plan"), json!(["reproduce", "fix", "verify"])),
            (json!("repo"), json!("kilo/town")),
        ]
    );
    let snapshot = &manifest["snapshot"];
    assert_keys(
        snapshot,
        &["sha256", "size", "event_watermark", "data_base64"],
    );
    assert_eq!(snapshot["sha256"], json!(sha256_hex(&db)));
    assert_eq!(snapshot["size"], json!(db.len()));
    assert_eq!(snapshot["event_watermark"], json!(EVENTS));
    let encoded = snapshot["data_base64"].as_str().unwrap_or_default();
    assert_eq!(
        encoded.len(),
        db.len().div_ceil(3) * 4,
        "standard padded base64"
    );
}

#[test]
fn an_agent_with_nothing_exports_an_empty_manifest() {
    let agent = Agent::fresh("export-empty");
    assert_eq!(agent.export(), empty_manifest());
}

#[test]
fn an_export_imported_elsewhere_rebuilds_the_same_agent() {
    let source = Agent::fresh("round-trip-source");
    let db = populate(&source);
    let manifest = source.export();
    let target = Town::fresh("round-trip-target").agent("rig-9", "copy");
    let answer = target.import_reply(&manifest).ok();
    assert_eq!(
        answer,
        json!({"events": EVENTS, "sessions": 2, "memory": 2, "checkpoint": true, "snapshot": true})
    );
    let copy = target.export();
    assert_eq!(copy["format"], manifest["format"]);
    assert_eq!(copy["agent"], manifest["agent"]);
    assert_eq!(
        copy["events"], manifest["events"],
        "events keep seqs and times"
    );
    assert_eq!(
        sessions_without_times(&copy["sessions"]),
        sessions_without_times(&manifest["sessions"])
    );
    assert_eq!(copy["checkpoint"], manifest["checkpoint"]);
    assert_eq!(
        memory_pairs(&copy["memory"]),
        memory_pairs(&manifest["memory"])
    );
    assert_eq!(copy["snapshot"], manifest["snapshot"]);
    let record = target.record();
    assert_eq!(record["role"], json!("polecat"));
    assert_eq!(record["last_seq"], json!(EVENTS));
    assert_eq!(record["event_count"], json!(EVENTS));
    assert_eq!(record["has_checkpoint"], json!(true));
    assert_eq!(record["snapshot"]["sha256"], json!(sha256_hex(&db)));
    assert_eq!(target.snapshot_reply().body, db, "the kilo.db bytes");
    assert_eq!(target.conversation(""), source.conversation(""));
    let next = target.log.append(json!([{"type": "after-import"}]));
    assert_eq!(
        next["first_seq"],
        json!(EVENTS + 1),
        "the log continues after the import"
    );
    let listed: Vec<Value> = target
        .town()
        .agents()
        .iter()
        .map(|a| a["agent_id"].clone())
        .collect();
    assert_eq!(
        listed,
        vec![json!("copy")],
        "the imported agent joins its town"
    );
}

#[test]
fn an_import_replaces_and_never_merges() {
    let agent = Agent::fresh("import-replaces");
    populate(&agent);
    agent.put_memory("stale", &json!("from before"));
    let manifest = json!({
        "format": "stasis.agent.v1",
        "agent": {"role": "refinery", "metadata": null},
        "events": [
            {"seq": 1, "type": "first", "session_id": null, "data": {"n": 1}, "created_at": 1_700_000_000_000_u64},
            {"seq": 2, "type": "second", "session_id": null, "data": {"n": 2}, "created_at": 1_700_000_000_001_u64},
        ],
        "memory": [{"key": "kept", "value": {"only": true}, "updated_at": 1_700_000_000_002_u64}],
    });
    let answer = agent.import_reply(&manifest).ok();
    assert_eq!(
        answer,
        json!({"events": 2, "sessions": 0, "memory": 1, "checkpoint": false, "snapshot": false})
    );
    let record = agent.record();
    assert_eq!(record["role"], json!("refinery"));
    assert_eq!(record["metadata"], Value::Null);
    let read: Vec<(Value, Value)> = events(&agent.log.read(""))
        .iter()
        .map(|e| (e["seq"].clone(), e["type"].clone()))
        .collect();
    assert_eq!(
        read,
        vec![(json!(1), json!("first")), (json!(2), json!("second"))]
    );
    assert_eq!(agent.log.sessions(), json!({"sessions": []}));
    assert_eq!(agent.memory_keys(""), vec!["kept"]);
    assert_error(&agent.memory_reply("stale"), 404, "memory_not_found");
    assert_error(&agent.memory_reply("plan"), 404, "memory_not_found");
    assert_error(&agent.checkpoint_reply(), 404, "checkpoint_not_found");
    assert_error(&agent.snapshot_reply(), 404, "snapshot_not_found");
}

#[test]
fn an_empty_manifest_resets_the_agent() {
    let agent = Agent::fresh("import-reset");
    populate(&agent);
    let answer = agent.import_reply(&json!({})).ok();
    assert_eq!(
        answer,
        json!({"events": 0, "sessions": 0, "memory": 0, "checkpoint": false, "snapshot": false})
    );
    assert_error(&agent.record_reply(), 404, "agent_not_found");
    assert_eq!(agent.log.read("")["events"], json!([]));
    assert_eq!(agent.log.sessions(), json!({"sessions": []}));
    assert_error(&agent.checkpoint_reply(), 404, "checkpoint_not_found");
    assert_eq!(agent.memory_list(""), json!({"entries": []}));
    assert_error(&agent.snapshot_reply(), 404, "snapshot_not_found");
    assert_eq!(agent.export(), empty_manifest());
    assert_eq!(agent.town().agents(), Vec::<Value>::new());
}

#[test]
fn a_malformed_manifest_is_refused_and_changes_nothing() {
    let agent = Agent::fresh("import-malformed");
    populate(&agent);
    let before = agent.state();
    let good = agent.export();
    let mut wrong_sha = good.clone();
    wrong_sha["snapshot"]["sha256"] = json!("0".repeat(64));
    let mut bad_base64 = good.clone();
    bad_base64["snapshot"]["data_base64"] = json!("!!! not base64 !!!");
    let event = |seq: Value, kind: Value| json!({"seq": seq, "type": kind, "data": null});
    let manifests = [
        json!([]),
        json!("stasis.agent.v1"),
        json!({"format": "stasis.agent.v0"}),
        json!({"events": {}}),
        json!({"events": [event(json!(2), json!("a")), event(json!(1), json!("b"))]}),
        json!({"events": [event(json!(1), json!("a")), event(json!(1), json!("b"))]}),
        json!({"events": [event(json!("one"), json!("a"))]}),
        json!({"events": [event(json!(1), json!(""))]}),
        json!({"agent": {"role": 5}}),
        json!({"agent": {"role": ""}}),
        json!({"memory": "notes"}),
        json!({"memory": [{"key": "a b", "value": 1}]}),
        json!({"sessions": [{"session_id": "s1", "status": "sleeping"}]}),
        wrong_sha,
        bad_base64,
    ];
    for manifest in manifests {
        let reply = agent.import_reply(&manifest);
        let shown: String = manifest.to_string().chars().take(200).collect();
        assert_eq!(reply.status, 400, "manifest {shown}: {}", reply.text());
        assert_error(&reply, 400, "invalid_manifest");
    }
    agent.assert_unchanged(&before);
}

/// A manifest whose snapshot holds `size` bytes, its header before or after
/// its `data_base64` (`text`).
fn snapshot_manifest(size: usize, text: &str, header_first: bool) -> String {
    let header = format!(
        r#""sha256":"{}","size":{size},"event_watermark":0"#,
        "a".repeat(64)
    );
    let data = format!(r#""data_base64":"{text}""#);
    if header_first {
        format!(r#"{{"snapshot":{{{header},{data}}}}}"#)
    } else {
        format!(r#"{{"snapshot":{{{data},{header}}}}}"#)
    }
}

#[test]
fn a_snapshot_past_the_limit_is_refused_413_from_its_header_or_its_bytes() {
    use base64::{Engine as _, engine::general_purpose::STANDARD};
    let _lane = stasis_conformance::snapshot::big_lane();
    let agent = Agent::fresh("import-snapshot-limit");
    populate(&agent);
    let before = agent.state();
    let limit = stasis_conformance::snapshot::MAX_BYTES;
    let over = stasis_conformance::snapshot::bytes(limit + 1, 0);
    let told = snapshot_manifest(limit + 1, "AAAA", true);
    let decoded = snapshot_manifest(limit + 1, &STANDARD.encode(over), false);
    for body in [told, decoded] {
        let reply = call("PUT", &agent.path("/import"))
            .header("Content-Type", "application/json")
            .header("Expect", "")
            .body(body)
            .send();
        let error = assert_error(&reply, 413, "snapshot_too_large");
        assert_eq!(error.get("limit"), Some(&json!(limit)), "{error:?}");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let agent = Agent::fresh("import-invalid-json");
    populate(&agent);
    let before = agent.state();
    for body in ["{\"events\": [", "", "manifest"] {
        let reply = call("PUT", &agent.path("/import"))
            .header("Content-Type", "application/json")
            .body(body)
            .send();
        assert_error(&reply, 400, "invalid_json");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("export-methods");
    populate(&agent);
    let before = agent.state();
    for method in ["POST", "PUT", "DELETE"] {
        let reply = call(method, &agent.path("/export")).json(&json!({})).send();
        assert_not_allowed(&reply, &["GET"]);
    }
    for method in ["GET", "POST", "DELETE"] {
        let reply = call(method, &agent.path("/import")).json(&json!({})).send();
        assert_not_allowed(&reply, &["PUT"]);
    }
    agent.assert_unchanged(&before);
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let agent = Agent::fresh("import-auth");
    populate(&agent);
    let before = agent.state();
    let import = agent.path("/import");
    let foreign = call("PUT", &import)
        .token(&foreign_token())
        .json(&json!({}))
        .send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = town_token(&unique_id("elsewhere"));
    let put = call("PUT", &import)
        .token(&elsewhere)
        .json(&json!({}))
        .send();
    assert_error(&put, 403, "forbidden");
    let export = call("GET", &agent.path("/export")).token(&elsewhere).send();
    assert_error(&export, 403, "forbidden");
    agent.assert_unchanged(&before);
}
