//! The checkpoint: one JSON document per agent, at most 1 MiB, stored and
//! read back exactly, replaced whole by each `PUT`. A refused request
//! changes nothing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Agent, assert_keys, assert_not_allowed};
use stasis_conformance::{
    assert_error, call, foreign_token, json, now_ms, num, town_token, unique_id,
};

const LIMIT: usize = 1_048_576;

/// A JSON string literal whose text is exactly `len` bytes.
fn json_string_of_len(len: usize) -> String {
    format!("\"{}\"", "c".repeat(len - 2))
}

fn put_text(agent: &Agent, text: impl Into<Vec<u8>>) -> stasis_conformance::Reply {
    call("PUT", &agent.path("/checkpoint"))
        .header("Content-Type", "application/json")
        .body(text)
        .send()
}

#[test]
fn a_checkpoint_is_stored_and_read_back_exactly() {
    let agent = Agent::fresh("checkpoint");
    let doc = json!({
        "bead": "gt-42",
        "step": 3,
        "files": ["src/main.rs", "README.md"],
        "notes": "halfway through the refactor; tests pass",
        "nested": {"ok": true, "ratio": 0.5, "none": null},
    });
    let start = now_ms();
    let stored = agent.put_checkpoint(&doc);
    assert_keys(&stored, &["size", "updated_at"]);
    assert_eq!(num(&stored, "size"), doc.to_string().len() as u64);
    let at = num(&stored, "updated_at");
    assert!(
        at + 60_000 >= start && at <= now_ms() + 60_000,
        "updated_at in ms"
    );
    let read = agent.checkpoint_reply();
    assert_eq!(read.ok(), doc);
    let content_type = read.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type:?}"
    );
}

#[test]
fn any_json_document_is_a_checkpoint() {
    let agent = Agent::fresh("checkpoint-any");
    for doc in [
        json!([1, "two", {"three": 3}]),
        json!("just text"),
        json!(42),
        json!({}),
        json!({"unicode": "é 漢字 🦀", "escapes": "\" \\ \n"}),
    ] {
        agent.put_checkpoint(&doc);
        assert_eq!(agent.checkpoint_reply().ok(), doc);
    }
}

#[test]
fn a_put_replaces_the_whole_document() {
    let agent = Agent::fresh("checkpoint-replace");
    agent.put_checkpoint(&json!({"a": 1, "b": 2}));
    agent.put_checkpoint(&json!({"c": 3}));
    assert_eq!(agent.checkpoint_reply().ok(), json!({"c": 3}));
}

#[test]
fn no_checkpoint_is_not_found() {
    let agent = Agent::fresh("checkpoint-none");
    assert_error(&agent.checkpoint_reply(), 404, "checkpoint_not_found");
    let delete = call("DELETE", &agent.path("/checkpoint")).send();
    assert_error(&delete, 404, "checkpoint_not_found");
}

#[test]
fn delete_removes_the_checkpoint() {
    let agent = Agent::fresh("checkpoint-delete");
    agent.register("polecat");
    agent.put_checkpoint(&json!({"step": 1}));
    assert_eq!(agent.record()["has_checkpoint"], json!(true));
    let reply = call("DELETE", &agent.path("/checkpoint")).send();
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_error(&agent.checkpoint_reply(), 404, "checkpoint_not_found");
    assert_eq!(agent.record()["has_checkpoint"], json!(false));
}

#[test]
fn a_checkpoint_of_exactly_one_mebibyte_is_accepted() {
    let agent = Agent::fresh("checkpoint-limit");
    let text = json_string_of_len(LIMIT);
    let reply = put_text(&agent, text.clone());
    assert_eq!(num(&reply.ok(), "size"), LIMIT as u64);
    assert_eq!(agent.checkpoint_reply().body, text.into_bytes());
}

#[test]
fn a_checkpoint_one_byte_over_one_mebibyte_is_too_large() {
    let agent = Agent::fresh("checkpoint-too-large");
    agent.put_checkpoint(&json!({"step": 1}));
    let before = agent.state();
    let reply = put_text(&agent, json_string_of_len(LIMIT + 1));
    let error = assert_error(&reply, 413, "checkpoint_too_large");
    assert_eq!(
        error.get("limit"),
        Some(&json!(LIMIT)),
        "limit in {error:?}"
    );
    let object = format!("{{\"pad\":{}}}", json_string_of_len(LIMIT + 1 - 8));
    assert_eq!(object.len(), LIMIT + 1);
    assert_error(&put_text(&agent, object), 413, "checkpoint_too_large");
    agent.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let agent = Agent::fresh("checkpoint-malformed");
    agent.put_checkpoint(&json!({"step": 1}));
    let before = agent.state();
    for body in ["{\"step\": ", "", "not json", "{\"a\": 1}}", "{'a': 1}"] {
        let reply = put_text(&agent, body);
        assert_eq!(reply.status, 400, "body {body:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_json");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn a_content_type_other_than_json_is_unsupported() {
    let agent = Agent::fresh("checkpoint-type");
    let before = agent.state();
    let reply = call("PUT", &agent.path("/checkpoint"))
        .header("Content-Type", "application/octet-stream")
        .body("{}")
        .send();
    assert_error(&reply, 415, "unsupported_media_type");
    agent.assert_unchanged(&before);
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("checkpoint-methods");
    agent.put_checkpoint(&json!({"step": 1}));
    let before = agent.state();
    for method in ["POST", "PATCH"] {
        let reply = call(method, &agent.path("/checkpoint"))
            .json(&json!({"step": 2}))
            .send();
        assert_not_allowed(&reply, &["GET", "PUT", "DELETE"]);
    }
    agent.assert_unchanged(&before);
}

#[test]
fn an_invalid_agent_id_is_refused() {
    let agent = Agent::fresh("checkpoint-ids");
    let path = format!(
        "/api/towns/{}/rigs/rig-1/agents/a%20b/checkpoint",
        agent.log.town
    );
    let reply = call("PUT", &path).json(&json!({"step": 1})).send();
    assert_error(&reply, 400, "invalid_id");
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let agent = Agent::fresh("checkpoint-auth");
    agent.put_checkpoint(&json!({"step": 1}));
    let before = agent.state();
    let path = agent.path("/checkpoint");
    let doc = json!({"step": 666});
    let foreign = call("PUT", &path).token(&foreign_token()).json(&doc).send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = town_token(&unique_id("elsewhere"));
    assert_error(
        &call("PUT", &path).token(&elsewhere).json(&doc).send(),
        403,
        "forbidden",
    );
    assert_error(
        &call("GET", &path).token(&elsewhere).send(),
        403,
        "forbidden",
    );
    assert_error(
        &call("DELETE", &path).token(&elsewhere).send(),
        403,
        "forbidden",
    );
    agent.assert_unchanged(&before);
    let own = call("GET", &path)
        .token(&town_token(&agent.log.town))
        .send();
    assert_eq!(own.ok(), json!({"step": 1}));
}
