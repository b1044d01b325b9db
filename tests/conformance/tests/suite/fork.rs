//! Fork (`POST /fork`): a fork at seq S has the source's events 1..S and
//! its kilo.db (chunked), workspace, checkpoint and memory of S, with its
//! lineage in its record; it copies no chunk (its pushes find the source's
//! chunks held); a fork of a fork works; after the source is deleted both
//! still pull whole; and once the last fork goes, the chunks nothing names
//! any more are collected. Bad input is refused in the contract's format
//! and changes nothing.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::{SnapshotAgent, sha256_hex};
use stasis_conformance::workspace::{Tree, WorkspaceAgent, noise};
use stasis_conformance::{AgentLog, Value, assert_error, call, eventually, json, num, seqs};

/// One state of the source: kilo.db bytes past the inline limit, a tree,
/// a checkpoint and a memory value, all written at the log's last seq.
struct State {
    db: Vec<u8>,
    tree: Tree,
    step: u64,
}

fn write_state(log: &AgentLog, step: u64) -> State {
    let db = noise(2_500_000, step);
    let reply = SnapshotAgent { log: log.clone() }.put(&db, &[]);
    assert!(matches!(reply.status, 200 | 201), "{}", reply.text());
    let mut tree = Tree::default();
    tree.file("notes.txt", false, format!("step {step}\n").as_bytes());
    tree.file("data.bin", false, &noise(300_000, step + 100));
    let workspace = WorkspaceAgent { log: log.clone() };
    let reply = workspace.push(&tree, &tree.paged(), &[]);
    assert!(matches!(reply.status, 200 | 201), "{}", reply.text());
    call("PUT", &log.path("/checkpoint"))
        .json(&json!({ "step": step }))
        .send()
        .expect_json(200);
    call("PUT", &log.path("/memory/k"))
        .json(&json!({ "step": step }))
        .send()
        .expect_json(200);
    State { db, tree, step }
}

fn events(log: &AgentLog, n: usize, label: &str) {
    let batch: Vec<Value> = (0..n)
        .map(|i| json!({"type": "turn", "session_id": "s1", "data": {"label": label, "i": i}}))
        .collect();
    log.append(Value::Array(batch));
}

fn fork(source: &AgentLog, body: &Value) -> stasis_conformance::Reply {
    call("POST", &source.path("/fork")).json(body).send()
}

/// Asserts `log` holds exactly `state` and the events 1..=seq.
fn assert_holds(log: &AgentLog, state: &State, seq: u64) {
    let page = call("GET", &log.path("/events?after=0&limit=1000"))
        .send()
        .expect_json(200);
    assert_eq!(
        seqs(&page),
        (1..=seq).collect::<Vec<_>>(),
        "events 1..={seq}"
    );
    let snapshot = SnapshotAgent { log: log.clone() }.get(&[]);
    assert_eq!(snapshot.status, 200, "{}", snapshot.text());
    assert!(snapshot.body == state.db, "kilo.db of step {}", state.step);
    let workspace = WorkspaceAgent { log: log.clone() };
    let (head, _, files) = workspace.pull();
    assert_eq!(
        head["root_hash"],
        state.tree.paged().head.root_hash.to_hex()
    );
    assert_eq!(
        files.get(b"notes.txt".as_slice()).map(Vec::as_slice),
        Some(format!("step {}\n", state.step).as_bytes())
    );
    let checkpoint = call("GET", &log.path("/checkpoint"))
        .send()
        .expect_json(200);
    assert_eq!(checkpoint["step"], state.step);
    let memory = call("GET", &log.path("/memory/k")).send().expect_json(200);
    assert_eq!(memory["value"]["step"], state.step);
}

fn chunks_of(log: &AgentLog) -> Vec<String> {
    let manifest = call("GET", &log.path("/db-snapshot/manifest"))
        .send()
        .expect_json(200);
    manifest["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c.as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn a_fork_at_a_seq_takes_that_state_and_outlives_its_source() {
    let source = AgentLog::fresh("fork-source");
    call("PUT", &source.path(""))
        .json(&json!({"role": "polecat"}))
        .send()
        .expect_json(201);
    events(&source, 3, "before");
    let first = write_state(&source, 1);
    events(&source, 4, "after");
    let second = write_state(&source, 2);
    let first_chunks = {
        // The chunks of kilo.db at seq 3 (read through its kept version).
        let listed = call("GET", &source.path("/history?kind=db_snapshot"))
            .send()
            .expect_json(200);
        let v1 = num(&listed["versions"][0], "version");
        let manifest = call(
            "GET",
            &source.path(&format!("/db-snapshot/manifest?version={v1}")),
        )
        .send()
        .expect_json(200);
        assert_eq!(manifest["sha256"], sha256_hex(&first.db));
        manifest["chunks"].as_array().expect("chunks").clone()
    };

    // Bad input changes nothing.
    let fork_log = AgentLog::new(&source.town, "rig-2", "fork-1");
    for (body, status, code) in [
        (
            json!({"point": {}, "agent": "fork-1", "rig": "rig-2"}),
            400,
            "invalid_request",
        ),
        (
            json!({"point": {"seq": 99}, "agent": "fork-1", "rig": "rig-2"}),
            400,
            "invalid_request",
        ),
        (
            json!({"point": {"seq": 3}, "agent": "a/b"}),
            400,
            "invalid_id",
        ),
        (
            json!({"point": {"kind": "db_snapshot", "version": 999}, "agent": "fork-1", "rig": "rig-2"}),
            404,
            "version_not_found",
        ),
    ] {
        let reply = fork(&source, &body);
        assert_error(&reply, status, code);
    }
    let unknown = source.sibling("nobody");
    assert_error(
        &fork(
            &unknown,
            &json!({"point": {"seq": 1}, "agent": "fork-1", "rig": "rig-2"}),
        ),
        404,
        "agent_not_found",
    );
    assert_eq!(
        call("GET", &fork_log.path("")).send().status,
        404,
        "no fork was made"
    );

    // The fork at seq 3.
    let reply = fork(
        &source,
        &json!({"point": {"seq": 3}, "rig": "rig-2", "agent": "fork-1"}),
    );
    let record = reply.expect_json(201);
    assert_eq!(
        record["forked_from"],
        json!({"rig": source.rig, "agent": source.agent, "seq": 3})
    );
    assert_eq!(record["role"], "polecat");
    assert_holds(&fork_log, &first, 3);
    assert_eq!(
        call("GET", &fork_log.path("")).send().expect_json(200)["forked_from"]["seq"],
        3,
        "the record shows the lineage"
    );
    assert_holds(&source, &second, 7);
    // The fork already holds its chunks: a push of the same bytes finds
    // none missing.
    let missing = call("POST", &fork_log.path("/db-snapshot/missing"))
        .json(&json!({ "chunks": first_chunks }))
        .send()
        .expect_json(200);
    assert_eq!(
        missing["missing"],
        json!([]),
        "the fork's pushes deduplicate"
    );
    // The target exists now.
    assert_error(
        &fork(
            &source,
            &json!({"point": {"seq": 3}, "rig": "rig-2", "agent": "fork-1"}),
        ),
        409,
        "agent_exists",
    );

    // A fork of the fork, by version.
    let fork_of_fork = AgentLog::new(&source.town, "rig-2", "fork-2");
    let reply = fork(&fork_log, &json!({"point": {"seq": 3}, "agent": "fork-2"}));
    assert_eq!(reply.expect_json(201)["forked_from"]["agent"], "fork-1");
    assert_holds(&fork_of_fork, &first, 3);

    // The source goes; both forks still pull whole.
    assert_eq!(call("DELETE", &source.path("")).send().status, 204);
    assert_holds(&fork_log, &first, 3);
    assert_holds(&fork_of_fork, &first, 3);
    let names: Vec<String> = chunks_of(&fork_log);
    let chunk =
        |name: &str| call("GET", &source.path(&format!("/db-snapshot/chunks/{name}"))).send();
    for name in &names {
        assert_eq!(
            chunk(name).status,
            200,
            "the deleted source keeps {name} for its forks"
        );
    }

    // The first fork goes: the second still names the chunks.
    assert_eq!(call("DELETE", &fork_log.path("")).send().status, 204);
    assert_holds(&fork_of_fork, &first, 3);
    for name in &names {
        assert_eq!(
            chunk(name).status,
            200,
            "a fork of the fork still names {name}"
        );
    }
    // The last fork goes: nothing names them any more, and they are collected.
    assert_eq!(call("DELETE", &fork_of_fork.path("")).send().status, 204);
    eventually("the chunks nothing names are collected", || {
        match names.iter().find(|name| chunk(name).status != 404) {
            Some(name) => Err(format!("chunk {name} is still served")),
            None => Ok(()),
        }
    });
}

#[test]
fn a_fork_by_version_or_time_resolves_like_a_seq() {
    let source = AgentLog::fresh("fork-version");
    call("PUT", &source.path(""))
        .json(&json!({"role": "mayor"}))
        .send()
        .expect_json(201);
    events(&source, 2, "before");
    let first = write_state(&source, 5);
    events(&source, 2, "after");
    let _second = write_state(&source, 6);
    let listed = call("GET", &source.path("/history?kind=checkpoint"))
        .send()
        .expect_json(200);
    let v1 = num(&listed["versions"][0], "version");
    let by_version = AgentLog::new(&source.town, &source.rig, "by-version");
    let reply = fork(
        &source,
        &json!({"point": {"kind": "checkpoint", "version": v1}, "agent": "by-version"}),
    );
    let record = reply.expect_json(201);
    // A town has one mayor: a mayor's fork is not one.
    assert_eq!(record["role"], "mayor-fork");
    assert_holds(&by_version, &first, 2);
}
