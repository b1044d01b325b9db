//! Restore in place (`POST .../restore`): every kind (a chunked kilo.db,
//! the workspace, the checkpoint, memory) back to a seq, a time or a
//! version; the undo handle puts the agent back byte for byte (the export
//! after the undo is the export before with the two `stasis.restored`
//! events inserted, nothing else); the dispatch's conversation continues
//! from the point; bad input changes nothing; a live container refuses the
//! restore unless it is fenced.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::SnapshotAgent;
use stasis_conformance::tokens::container_token;
use stasis_conformance::town::{Agent, Town, turn, turns, user_message};
use stasis_conformance::workspace::{Tree, WorkspaceAgent, noise};
use stasis_conformance::{Reply, Value, assert_error, call, json, now_ms, num};
use std::time::Duration;

/// Past the inline limit (1 MiB): stored in chunks.
const CHUNKED: usize = 1_200_000;

/// One state of every kind, the n-th: a chunked kilo.db, a one-file tree,
/// a checkpoint, memory `k` and (from the second on) `j`.
struct Written {
    db: Vec<u8>,
    tree: Tree,
}

fn write_state(agent: &Agent, n: u64) -> Written {
    let db = noise(CHUNKED, n);
    let reply = SnapshotAgent {
        log: agent.log.clone(),
    }
    .put(&db, &[]);
    assert!(
        reply.status == 201 || reply.status == 200,
        "{}",
        reply.text()
    );
    let mut tree = Tree::default();
    tree.file("notes.txt", false, format!("state {n}\n").as_bytes());
    let workspace = WorkspaceAgent {
        log: agent.log.clone(),
    };
    let reply = workspace.push(&tree, &tree.paged(), &[]);
    assert!(
        reply.status == 201 || reply.status == 200,
        "{}",
        reply.text()
    );
    agent.put_checkpoint(&json!({ "step": n }));
    agent.put_memory("k", &json!({ "n": n }));
    if n > 1 {
        agent.put_memory("j", &json!({ "n": n }));
    }
    Written { db, tree }
}

fn say(agent: &Agent, id: &str, text: &str) -> u64 {
    let appended = agent.log.append(Value::Array(user_message(None, id, text)));
    num(&appended, "last_seq")
}

fn restore(agent: &Agent, body: &Value) -> Reply {
    call("POST", &agent.path("/restore")).json(body).send()
}

fn export_bytes(agent: &Agent) -> Vec<u8> {
    let reply = call("GET", &agent.path("/export")).send();
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.body
}

/// Asserts every kind reads as `written` (and memory `j` as `j`).
fn assert_state(agent: &Agent, n: u64, written: &Written, j: Option<u64>) {
    let db = call("GET", &agent.path("/db-snapshot")).send();
    assert_eq!(db.status, 200, "{}", db.text());
    assert!(
        db.body == written.db,
        "kilo.db is state {n}'s, byte for byte"
    );
    let head = call("GET", &agent.path("/workspace/manifest"))
        .send()
        .expect_json(200);
    assert_eq!(
        head["root_hash"],
        written.tree.paged().head.root_hash.to_hex(),
        "the workspace is state {n}'s"
    );
    let checkpoint = agent.checkpoint_reply().expect_json(200);
    assert_eq!(checkpoint, json!({ "step": n }), "the checkpoint");
    let k = agent.memory_reply("k").expect_json(200);
    assert_eq!(k["value"], json!({ "n": n }), "memory k");
    match j {
        Some(j) => assert_eq!(
            agent.memory_reply("j").expect_json(200)["value"],
            json!({ "n": j })
        ),
        None => {
            assert_error(&agent.memory_reply("j"), 404, "memory_not_found");
        }
    }
}

fn restored_events(agent: &Agent) -> Vec<Value> {
    agent
        .log
        .read_all(0, "&type=stasis.restored")
        .into_iter()
        .collect()
}

/// `after` is `before` with one run of bytes inserted, and that run is
/// `count` `stasis.restored` events of the `events` array.
fn assert_only_restores_inserted(before: &[u8], after: &[u8], count: usize) {
    let prefix = before.iter().zip(after).take_while(|(a, b)| a == b).count();
    let room = before.len() - prefix;
    let suffix = before
        .iter()
        .rev()
        .zip(after.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    assert_eq!(
        prefix + suffix,
        before.len(),
        "the export after differs from the one before beyond one inserted run"
    );
    let inserted = String::from_utf8_lossy(&after[prefix..after.len() - suffix]).into_owned();
    let list = format!("[{}]", inserted.trim_matches(','));
    let events: Vec<Value> = serde_json::from_str(&list)
        .unwrap_or_else(|err| panic!("the inserted run {inserted:?} is events: {err}"));
    assert_eq!(events.len(), count, "{inserted}");
    for event in events {
        assert_eq!(event["type"], json!("stasis.restored"), "{event}");
    }
}

#[test]
fn a_restore_to_a_seq_then_its_undo_gives_back_the_exact_earlier_state() {
    let town = Town::fresh("restore-seq");
    let agent = town.agent("rig-1", "polecat-1");
    agent.register("polecat");
    say(&agent, "u1", "first ask");
    let one = write_state(&agent, 1);
    let point = agent.log.state().last_seq;
    let first_manifest = call("GET", &agent.path("/db-snapshot/manifest"))
        .send()
        .expect_json(200);
    say(&agent, "u2", "second ask");
    let two = write_state(&agent, 2);
    let before = export_bytes(&agent);
    let last = agent.log.state().last_seq;

    let restored = restore(&agent, &json!({ "seq": point })).expect_json(200);
    assert_eq!(num(&restored, "seq"), last + 1, "{restored}");
    assert_eq!(num(&restored, "point_seq"), point);
    for kind in ["db_snapshot", "workspace", "checkpoint"] {
        assert_eq!(restored[kind]["changed"], json!(true), "{kind}: {restored}");
    }
    assert_state(&agent, 1, &one, None);
    // No chunk was copied: the restored manifest names state 1's chunks.
    let manifest = call("GET", &agent.path("/db-snapshot/manifest"))
        .send()
        .expect_json(200);
    assert_eq!(manifest["chunks"], first_manifest["chunks"]);
    let recorded = restored_events(&agent);
    assert_eq!(recorded.len(), 1, "one stasis.restored event");
    assert_eq!(num(&recorded[0], "seq"), last + 1);
    assert_eq!(num(&recorded[0]["data"], "seq"), point);
    assert_eq!(recorded[0]["data"]["point"], json!({ "seq": point }));
    let undo = restored["undo"].clone();
    assert_eq!(num(&undo, "seq"), last);
    let pin = call(
        "GET",
        &agent.path(&format!(
            "/history/pins/{}",
            undo["pin"].as_str().unwrap_or("")
        )),
    )
    .send()
    .expect_json(200);
    assert_eq!(num(&pin, "seq"), last, "the undo handle is a pin");

    let undone = restore(&agent, &json!({ "pin": undo["pin"] })).expect_json(200);
    assert_eq!(num(&undone, "point_seq"), last);
    assert_state(&agent, 2, &two, Some(2));
    assert_only_restores_inserted(&before, &export_bytes(&agent), 2);
}

#[test]
fn a_restore_to_a_time_and_to_a_version() {
    let town = Town::fresh("restore-time");
    let agent = town.agent("rig-1", "polecat-1");
    say(&agent, "u1", "first");
    let one = write_state(&agent, 1);
    std::thread::sleep(Duration::from_millis(100));
    let between = now_ms();
    std::thread::sleep(Duration::from_millis(100));
    say(&agent, "u2", "second");
    let two = write_state(&agent, 2);

    restore(&agent, &json!({ "at": between })).expect_json(200);
    assert_state(&agent, 1, &one, None);

    let listed = call("GET", &agent.path("/history?kind=checkpoint"))
        .send()
        .expect_json(200);
    let versions: Vec<Value> = listed["versions"].as_array().cloned().unwrap_or_default();
    let step_two = versions
        .iter()
        .find(|v| {
            let query = format!("/checkpoint?version={}", num(v, "version"));
            call("GET", &agent.path(&query)).send().json() == json!({"step": 2})
        })
        .map(|v| num(v, "version"))
        .expect("checkpoint step 2 is kept");
    let by_version = json!({ "kind": "checkpoint", "version": step_two });
    restore(&agent, &by_version).expect_json(200);
    assert_state(&agent, 2, &two, Some(2));
}

#[test]
fn the_dispatch_conversation_continues_from_the_point() {
    let town = Town::fresh("restore-dispatch");
    let agent = town.agent("rig-1", "polecat-1");
    agent.register("polecat");
    say(&agent, "u1", "keep this");
    let point = say(&agent, "u2", "and this");
    say(&agent, "u3", "forget this");
    say(&agent, "u4", "and this too");
    restore(&agent, &json!({ "seq": point })).expect_json(200);
    say(&agent, "u5", "after the restore");
    let reply = agent.dispatch_reply(&json!({}));
    let dispatch = reply.ok()["dispatch"].clone();
    let said: Vec<Value> = turns(&dispatch["prior_conversation"]);
    let conversation = turns(&agent.conversation(""));
    assert_eq!(
        conversation,
        [
            turn("user", "keep this"),
            turn("user", "and this"),
            turn("user", "after the restore")
        ],
        "the conversation skips the turns after the point"
    );
    for skipped in ["forget this", "and this too"] {
        assert!(
            !dispatch.to_string().contains(skipped),
            "the dispatch leaves {skipped:?} out: {said:?}"
        );
    }
}

#[test]
fn bad_input_changes_nothing() {
    let town = Town::fresh("restore-bad");
    let agent = town.agent("rig-1", "polecat-1");
    say(&agent, "u1", "one");
    write_state(&agent, 1);
    say(&agent, "u2", "two");
    write_state(&agent, 2);
    let before = export_bytes(&agent);
    let last = agent.log.state().last_seq;
    let cases = [
        (json!({ "seq": last + 1 }), 400, "invalid_request"),
        (
            json!({ "kind": "checkpoint", "version": 999 }),
            404,
            "version_not_found",
        ),
        (
            json!({ "kind": "memory", "version": 1, "key": "nope" }),
            404,
            "version_not_found",
        ),
        (json!({ "pin": "no-such-pin" }), 404, "pin_not_found"),
        (json!({}), 400, "invalid_request"),
        (json!({ "seq": 1, "at": 5 }), 400, "invalid_request"),
        (json!({ "seq": 1, "pin": "p" }), 400, "invalid_request"),
        (json!({ "seq": "one" }), 400, "invalid_request"),
        (json!({ "sequence": 1 }), 400, "invalid_request"),
        (
            json!({ "kind": "kilo", "version": 1 }),
            400,
            "invalid_request",
        ),
    ];
    for (body, status, code) in cases {
        let reply = restore(&agent, &body);
        assert_eq!(reply.status, status, "{body}: {}", reply.text());
        assert_error(&reply, status, code);
    }
    let malformed = call("POST", &agent.path("/restore"))
        .header("Content-Type", "application/json")
        .body(b"{not json".to_vec())
        .send();
    assert_eq!(malformed.status, 400, "{}", malformed.text());
    assert!(export_bytes(&agent) == before, "the export is byte-equal");
    let pins = call("GET", &agent.path("/history/pins"))
        .send()
        .expect_json(200);
    assert_eq!(pins["pins"], json!([]), "no undo pin was left");
}

#[test]
fn a_live_container_refuses_a_restore_unless_it_is_fenced() {
    let town = Town::fresh("restore-live");
    let agent = town.agent("rig-1", "mayor");
    agent.register("mayor");
    let point = say(&agent, "u1", "one");
    agent.put_checkpoint(&json!({ "step": 1 }));
    say(&agent, "u2", "two");
    agent.put_checkpoint(&json!({ "step": 2 }));
    let holder = container_token(&town.id, "container-a");
    call("POST", &town.path("/heartbeat"))
        .token(&holder)
        .json(&json!({ "container_id": "container-a" }))
        .send()
        .expect_json(200);
    let before = export_bytes(&agent);

    let refused = restore(&agent, &json!({ "seq": point }));
    assert_error(&refused, 409, "agent_live");
    assert!(
        export_bytes(&agent) == before,
        "a refused restore changes nothing"
    );

    restore(&agent, &json!({ "seq": point, "fence": true })).expect_json(200);
    assert_eq!(
        agent.checkpoint_reply().expect_json(200),
        json!({ "step": 1 })
    );
    // The holder's next write is refused: its supervisor stops its runtime.
    let late = call("PUT", &agent.path("/checkpoint"))
        .token(&holder)
        .json(&json!({ "step": "stale" }))
        .send();
    assert_error(&late, 409, "container_fenced");
    assert_eq!(
        agent.checkpoint_reply().expect_json(200),
        json!({ "step": 1 })
    );
    // The next container boots into the restored state and writes.
    let next = container_token(&town.id, "container-b");
    call("POST", &town.path("/heartbeat"))
        .token(&next)
        .json(&json!({ "container_id": "container-b" }))
        .send()
        .expect_json(200);
    call("PUT", &agent.path("/checkpoint"))
        .token(&next)
        .json(&json!({ "step": 3 }))
        .send()
        .expect_json(200);
}
