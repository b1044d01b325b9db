//! The agent's key-value memory: `PUT/GET/DELETE /memory/{key}` with any
//! JSON value up to 1 MiB, and `GET /memory` listing entries sorted by key,
//! narrowed by `prefix` and by `q` (a case-insensitive search of each
//! value's JSON text). A refused request changes nothing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{Agent, assert_keys, assert_not_allowed, escape};
use stasis_conformance::{
    Value, assert_error, assert_message_names, call, foreign_token, json, now_ms, num, town_token,
    unique_id,
};

const LIMIT: usize = 1_048_576;

fn put_text(agent: &Agent, key: &str, text: impl Into<Vec<u8>>) -> stasis_conformance::Reply {
    call("PUT", &agent.path(&format!("/memory/{key}")))
        .header("Content-Type", "application/json")
        .body(text)
        .send()
}

#[test]
fn a_value_is_stored_and_read_back() {
    let agent = Agent::fresh("memory");
    let value = json!({"repo": "kilo/town", "branch": "feat/x", "open_prs": [12, 15]});
    let start = now_ms();
    let stored = agent.put_memory("project", &value);
    assert_keys(&stored, &["key", "value", "updated_at"]);
    assert_eq!(stored["key"], json!("project"));
    assert_eq!(stored["value"], value);
    let at = num(&stored, "updated_at");
    assert!(
        at + 60_000 >= start && at <= now_ms() + 60_000,
        "updated_at in ms"
    );
    assert_eq!(agent.memory_reply("project").ok(), stored);
}

#[test]
fn any_json_value_is_stored_and_a_put_replaces_it() {
    let agent = Agent::fresh("memory-values");
    for value in [
        json!("text"),
        json!(7),
        json!(null),
        json!(false),
        json!([1, [2]]),
        json!({"deep": {"er": "é 🦀"}}),
    ] {
        agent.put_memory("k", &value);
        assert_eq!(agent.memory_reply("k").ok()["value"], value);
    }
    assert_eq!(agent.memory_keys(""), vec!["k"]);
}

#[test]
fn an_unknown_key_is_not_found() {
    let agent = Agent::fresh("memory-unknown");
    agent.put_memory("known", &json!(1));
    assert_error(&agent.memory_reply("unknown"), 404, "memory_not_found");
    let delete = call("DELETE", &agent.path("/memory/unknown")).send();
    assert_error(&delete, 404, "memory_not_found");
}

#[test]
fn delete_removes_one_key() {
    let agent = Agent::fresh("memory-delete");
    agent.put_memory("a", &json!(1));
    agent.put_memory("b", &json!(2));
    let reply = call("DELETE", &agent.path("/memory/a")).send();
    assert_eq!(reply.status, 204, "{}", reply.text());
    assert_error(&agent.memory_reply("a"), 404, "memory_not_found");
    assert_eq!(agent.memory_keys(""), vec!["b"]);
}

#[test]
fn the_listing_is_sorted_by_key_and_shows_each_entry() {
    let agent = Agent::fresh("memory-list");
    for key in ["zeta", "alpha", "Mid", "beta.2", "beta.10", "a:b"] {
        agent.put_memory(key, &json!({ "name": key }));
    }
    let listing = agent.memory_list("");
    assert_keys(&listing, &["entries"]);
    let entries = listing["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("an entries array: {listing}"));
    for entry in entries {
        assert_keys(entry, &["key", "value", "updated_at"]);
        assert_eq!(entry["value"]["name"], entry["key"]);
    }
    let mut sorted = vec!["zeta", "alpha", "Mid", "beta.2", "beta.10", "a:b"];
    sorted.sort_unstable();
    assert_eq!(agent.memory_keys(""), sorted, "byte order of keys");
}

#[test]
fn an_agent_with_no_memory_lists_nothing() {
    let agent = Agent::fresh("memory-empty");
    assert_eq!(agent.memory_list(""), json!({"entries": []}));
}

#[test]
fn prefix_keeps_keys_that_start_with_it() {
    let agent = Agent::fresh("memory-prefix");
    for key in ["task.1", "task.2", "tasks", "note.task", "Task.3"] {
        agent.put_memory(key, &json!(key));
    }
    assert_eq!(agent.memory_keys("prefix=task."), vec!["task.1", "task.2"]);
    assert_eq!(
        agent.memory_keys("prefix=task"),
        vec!["task.1", "task.2", "tasks"]
    );
    assert_eq!(agent.memory_keys("prefix=none"), Vec::<String>::new());
}

#[test]
fn q_searches_values_case_insensitively() {
    let agent = Agent::fresh("memory-q");
    agent.put_memory("a", &json!({"summary": "Fixed the Login bug"}));
    agent.put_memory("b", &json!(["deploy", "LOGIN page"]));
    agent.put_memory("c", &json!("unrelated"));
    agent.put_memory("login", &json!(1));
    assert_eq!(
        agent.memory_keys("q=login"),
        vec!["a", "b"],
        "values, not keys"
    );
    assert_eq!(
        agent.memory_keys(&format!("q={}", escape("the login"))),
        vec!["a"]
    );
    assert_eq!(agent.memory_keys("q=zzz"), Vec::<String>::new());
    assert_eq!(agent.memory_keys("q=login&prefix=b"), vec!["b"]);
}

#[test]
fn limit_keeps_the_first_keys() {
    let agent = Agent::fresh("memory-limit");
    for n in 0..5 {
        agent.put_memory(&format!("k{n}"), &json!(n));
    }
    assert_eq!(agent.memory_keys("limit=2"), vec!["k0", "k1"]);
    assert_eq!(agent.memory_keys("limit=1000").len(), 5);
}

#[test]
fn bad_limits_are_invalid_requests() {
    let agent = Agent::fresh("memory-bad-limit");
    agent.put_memory("k", &json!(1));
    for query in ["limit=0", "limit=1001", "limit=x", "limit=-1", "limit=1.5"] {
        let reply = call("GET", &agent.path(&format!("/memory?{query}"))).send();
        assert_eq!(reply.status, 400, "query {query:?}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "limit");
    }
}

#[test]
fn a_value_of_one_mebibyte_is_accepted_and_one_byte_more_refused() {
    let agent = Agent::fresh("memory-too-large");
    let at_limit = format!("\"{}\"", "m".repeat(LIMIT - 2));
    put_text(&agent, "big", at_limit).ok();
    agent.put_memory("small", &json!(1));
    let before = agent.state();
    let over = format!("\"{}\"", "m".repeat(LIMIT - 1));
    for key in ["small", "new"] {
        let reply = put_text(&agent, key, over.clone());
        let error = assert_error(&reply, 413, "memory_value_too_large");
        assert_eq!(
            error.get("limit"),
            Some(&json!(LIMIT)),
            "limit in {error:?}"
        );
    }
    agent.assert_unchanged(&before);
}

#[test]
fn malformed_json_is_invalid_json() {
    let agent = Agent::fresh("memory-malformed");
    agent.put_memory("k", &json!(1));
    let before = agent.state();
    for body in ["{\"a\": ", "", "bare words", "[1]]"] {
        let reply = put_text(&agent, "k", body);
        assert_eq!(reply.status, 400, "body {body:?}: {}", reply.text());
        assert_error(&reply, 400, "invalid_json");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn an_invalid_key_is_an_invalid_id() {
    let agent = Agent::fresh("memory-bad-key");
    let before = agent.state();
    for bad in [
        "a%20b".to_owned(),
        "a~b".to_owned(),
        "k".repeat(129),
        "%2F".to_owned(),
    ] {
        let put = call("PUT", &agent.path(&format!("/memory/{bad}")))
            .json(&json!(1))
            .send();
        assert_error(&put, 400, "invalid_id");
        let get = call("GET", &agent.path(&format!("/memory/{bad}"))).send();
        assert_error(&get, 400, "invalid_id");
    }
    agent.assert_unchanged(&before);
}

#[test]
fn other_methods_are_not_allowed() {
    let agent = Agent::fresh("memory-methods");
    agent.put_memory("k", &json!(1));
    let before = agent.state();
    let post = call("POST", &agent.path("/memory/k"))
        .json(&json!(2))
        .send();
    assert_not_allowed(&post, &["GET", "PUT", "DELETE"]);
    for method in ["PUT", "POST", "DELETE"] {
        let reply = call(method, &agent.path("/memory")).json(&json!({})).send();
        assert_not_allowed(&reply, &["GET"]);
    }
    agent.assert_unchanged(&before);
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let agent = Agent::fresh("memory-auth");
    agent.put_memory("k", &json!("mine"));
    let before = agent.state();
    let path = agent.path("/memory/k");
    let foreign = call("PUT", &path)
        .token(&foreign_token())
        .json(&json!(0))
        .send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = town_token(&unique_id("elsewhere"));
    let refused: [(&str, Option<Value>); 3] =
        [("PUT", Some(json!(0))), ("DELETE", None), ("GET", None)];
    for (method, body) in refused {
        let mut request = call(method, &path).token(&elsewhere);
        if let Some(body) = body {
            request = request.json(&body);
        }
        assert_error(&request.send(), 403, "forbidden");
    }
    let list = call("GET", &agent.path("/memory")).token(&elsewhere).send();
    assert_error(&list, 403, "forbidden");
    agent.assert_unchanged(&before);
}
