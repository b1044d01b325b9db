//! Messaging the Mayor: `POST /api/towns/{town}/mayor/message` first
//! persists the text in the Mayor's log as a user message, then delivers it
//! to a live Mayor session, redispatches the Mayor with its checkpoint and
//! rebuilt conversation, or — while the town drains — defers the dispatch
//! to the heartbeat that clears draining, which releases it exactly once
//! with the message in its conversation.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::{
    Agent, CLOSE, Town, assert_dispatch_shape, assert_keys, assert_not_allowed, assert_prompt,
    streamed, turn, turns, user_message,
};
use stasis_conformance::{
    Value, assert_error, assert_message_names, call, events, foreign_token, json, town_token,
    unique_id,
};

const ASK: &str = "What did the polecats finish today?";
const ANSWER: &str = "Two beads merged: gt-3 and gt-9.";

/// The town's Mayor (`hq/mayor`), registered, with one exchange in session
/// `ses-m` and a checkpoint; returns it with its checkpoint.
fn mayor_with_history(town: &Town) -> (Agent, Value) {
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    let mut all = user_message(Some("ses-m"), "u1", ASK);
    all.extend(streamed(
        Some("ses-m"),
        "a1",
        "assistant",
        &["Two beads ", "merged: ", "gt-3 and gt-9."],
    ));
    mayor.log.append(Value::Array(all));
    let checkpoint = json!({"convoy": "cv-1", "open_beads": ["gt-11"]});
    mayor.put_checkpoint(&checkpoint);
    (mayor, checkpoint)
}

/// The registry entry of the Mayor, in session `session` when given.
fn mayor_entry(session: Option<&str>) -> Value {
    match session {
        Some(session) => {
            json!({"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": session, "port": 4096})
        }
        None => json!({"agent_id": "mayor", "rig_id": "hq", "role": "mayor"}),
    }
}

/// The Mayor's newest event.
fn last_event(mayor: &Agent) -> Value {
    let all = events(&mayor.log.read(""));
    all.last()
        .cloned()
        .unwrap_or_else(|| panic!("the Mayor's log is empty"))
}

/// Asserts `event` is the user message `text`, in `session`.
fn assert_user_message(event: &Value, text: &str, session: Option<&str>) {
    assert_eq!(event["type"], json!("message.completed"), "{event}");
    assert_eq!(event["session_id"], json!(session), "{event}");
    let data = &event["data"];
    assert_eq!(data["info"]["role"], json!("user"), "{event}");
    assert!(data["info"]["id"].is_string(), "a message id: {event}");
    assert!(data["part"]["id"].is_string(), "a part id: {event}");
    assert_eq!(data["part"]["text"], json!(text), "{event}");
}

/// Asserts `dispatch` redispatches the Mayor with `checkpoint` and a
/// conversation ending with `text`, and returns its turns.
fn assert_mayor_dispatch(dispatch: &Value, checkpoint: &Value, text: &str) -> Vec<Value> {
    let prompt = assert_dispatch_shape(dispatch);
    assert_eq!(dispatch["agent_id"], json!("mayor"));
    assert_eq!(dispatch["rig_id"], json!("hq"));
    assert_eq!(dispatch["role"], json!("mayor"));
    assert_eq!(&dispatch["checkpoint"], checkpoint, "the stored checkpoint");
    let rebuilt = turns(&dispatch["prior_conversation"]);
    assert_eq!(rebuilt.last(), Some(&turn("user", text)), "{rebuilt:?}");
    assert_prompt(&prompt, &[ASK, ANSWER], text);
    rebuilt
}

#[test]
fn with_no_mayor_the_message_is_not_found_and_changes_nothing() {
    let town = Town::fresh("no-mayor");
    town.agent("rig-1", "p1").register("polecat");
    town.heartbeat("container-a");
    let before = town.state();
    assert_error(&town.mayor_message("hello?"), 404, "mayor_not_found");
    town.assert_unchanged(&before);
}

#[test]
fn a_live_mayor_session_in_the_current_container_gets_the_message() {
    let town = Town::fresh("deliver");
    let (mayor, _) = mayor_with_history(&town);
    town.heartbeat("container-a");
    town.put_registry("container-a", json!([mayor_entry(Some("ses-m"))]));
    let dispatches_before = town.events_of("dispatch_agent").len();
    let text = "Please start the next convoy.";
    let answer = town.mayor_message(text).ok();
    assert_eq!(
        answer,
        json!({"action": "deliver", "session_id": "ses-m", "container_id": "container-a"})
    );
    assert_user_message(&last_event(&mayor), text, Some("ses-m"));
    assert_eq!(
        turns(&mayor.conversation("")).last(),
        Some(&turn("user", text))
    );
    assert_eq!(town.events_of("mayor_message").len(), 1);
    assert_eq!(
        town.events_of("dispatch_agent").len(),
        dispatches_before,
        "a delivered message dispatches nothing"
    );
}

#[test]
fn with_no_registry_the_mayor_is_redispatched_with_its_checkpoint() {
    let town = Town::fresh("redispatch");
    let (mayor, checkpoint) = mayor_with_history(&town);
    let text = "Status report, please.";
    let answer = town.mayor_message(text).ok();
    assert_keys(&answer, &["action", "dispatch"]);
    assert_eq!(answer["action"], json!("redispatch"));
    let rebuilt = assert_mayor_dispatch(&answer["dispatch"], &checkpoint, text);
    assert_eq!(
        rebuilt,
        vec![
            turn("user", ASK),
            turn("assistant", ANSWER),
            turn("user", text)
        ]
    );
    assert_user_message(&last_event(&mayor), text, None);
    assert_eq!(town.events_of("dispatch_agent").len(), 1);
    assert_eq!(town.events_of("mayor_message").len(), 1);
}

#[test]
fn a_registry_of_a_container_no_longer_current_means_redispatch() {
    let town = Town::fresh("redispatch-stale-registry");
    let (mayor, checkpoint) = mayor_with_history(&town);
    town.heartbeat("container-a");
    town.put_registry("container-a", json!([mayor_entry(Some("ses-m"))]));
    town.evict("container-a", "SIGTERM");
    town.heartbeat("container-b");
    let text = "Are you back?";
    let answer = town.mayor_message(text).ok();
    assert_eq!(answer["action"], json!("redispatch"), "{answer}");
    assert_mayor_dispatch(&answer["dispatch"], &checkpoint, text);
    assert_user_message(&last_event(&mayor), text, Some("ses-m"));
}

#[test]
fn a_registered_mayor_without_a_session_means_redispatch() {
    let town = Town::fresh("redispatch-no-session");
    let (_, checkpoint) = mayor_with_history(&town);
    town.heartbeat("container-a");
    town.put_registry("container-a", json!([mayor_entry(None)]));
    let text = "Hello again.";
    let answer = town.mayor_message(text).ok();
    assert_eq!(answer["action"], json!("redispatch"), "{answer}");
    assert_mayor_dispatch(&answer["dispatch"], &checkpoint, text);
}

#[test]
fn a_mayor_without_a_checkpoint_is_redispatched_with_a_null_checkpoint() {
    let town = Town::fresh("redispatch-no-checkpoint");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    let text = "First message ever.";
    let answer = town.mayor_message(text).ok();
    let dispatch = &answer["dispatch"];
    let prompt = assert_dispatch_shape(dispatch);
    assert_eq!(dispatch["checkpoint"], Value::Null);
    assert_eq!(
        turns(&dispatch["prior_conversation"]),
        vec![turn("user", text)]
    );
    assert!(prompt.ends_with(text), "{prompt:?}");
}

#[test]
fn while_draining_the_message_is_deferred_and_released_once_by_the_clearing_heartbeat() {
    let town = Town::fresh("deferred");
    let (mayor, checkpoint) = mayor_with_history(&town);
    town.heartbeat("container-a");
    town.put_registry("container-a", json!([mayor_entry(Some("ses-m"))]));
    town.evict("container-a", "SIGTERM");
    let gap = "Did the deploy finish while you were away?";
    let reply = town.mayor_message(gap);
    assert_eq!(reply.expect_json(202), json!({"action": "deferred"}));
    assert_user_message(&last_event(&mayor), gap, Some("ses-m"));
    assert_eq!(town.events_of("dispatch_deferred").len(), 1);
    assert_eq!(
        town.events_of("dispatch_agent").len(),
        0,
        "nothing dispatched"
    );
    let late = town.heartbeat("container-a");
    assert_eq!(
        late["pending_dispatches"],
        json!([]),
        "a late heartbeat releases nothing"
    );
    let beat = town.heartbeat("container-b");
    assert_eq!(beat["cleared_drain"], json!(true));
    let pending = beat["pending_dispatches"]
        .as_array()
        .unwrap_or_else(|| panic!("pending_dispatches is an array: {beat}"));
    assert_eq!(pending.len(), 1, "one released dispatch: {beat}");
    let rebuilt = assert_mayor_dispatch(&pending[0], &checkpoint, gap);
    assert_eq!(
        rebuilt,
        vec![
            turn("user", ASK),
            turn("assistant", ANSWER),
            turn("user", gap)
        ]
    );
    let again = town.heartbeat("container-b");
    assert_eq!(
        again["pending_dispatches"],
        json!([]),
        "released exactly once"
    );
    assert_eq!(
        town.heartbeat("container-c")["pending_dispatches"],
        json!([])
    );
}

#[test]
fn every_message_of_the_gap_reaches_the_released_conversation() {
    let town = Town::fresh("deferred-two");
    let (_, checkpoint) = mayor_with_history(&town);
    town.heartbeat("container-a");
    town.evict("container-a", "SIGTERM");
    let first = "First message in the gap.";
    let second = "Second message in the gap.";
    assert_eq!(town.mayor_message(first).status, 202);
    assert_eq!(town.mayor_message(second).status, 202);
    let beat = town.heartbeat("container-b");
    let pending = beat["pending_dispatches"]
        .as_array()
        .unwrap_or_else(|| panic!("pending_dispatches is an array: {beat}"));
    assert!(!pending.is_empty(), "the Mayor is released: {beat}");
    for dispatch in pending {
        let rebuilt = assert_mayor_dispatch(dispatch, &checkpoint, second);
        let n = rebuilt.len();
        assert_eq!(
            rebuilt[n - 2],
            turn("user", first),
            "rebuilt at release time"
        );
    }
    assert_eq!(
        town.heartbeat("container-b")["pending_dispatches"],
        json!([])
    );
}

#[test]
fn the_redispatch_prompt_escapes_the_wrapper_tag_in_earlier_turns() {
    let town = Town::fresh("mayor-escape");
    let mayor = town.agent("hq", "mayor");
    mayor.register("mayor");
    let mut all = user_message(None, "u1", &format!("{ASK} {CLOSE}"));
    all.extend(streamed(None, "a1", "assistant", &[ANSWER, CLOSE]));
    mayor.log.append(Value::Array(all));
    let text = "Carry on.";
    let answer = town.mayor_message(text).ok();
    let prompt = assert_dispatch_shape(&answer["dispatch"]);
    assert_prompt(&prompt, &[ASK, ANSWER], text);
}

#[test]
fn a_bad_message_is_refused_and_changes_nothing() {
    let town = Town::fresh("mayor-invalid");
    let (mayor, _) = mayor_with_history(&town);
    let town_before = town.state();
    let mayor_before = mayor.state();
    for body in [
        json!({}),
        json!({"text": ""}),
        json!({"text": 5}),
        json!({"text": null}),
        json!({"text": ["hi"]}),
    ] {
        let reply = call("POST", &town.path("/mayor/message"))
            .json(&body)
            .send();
        assert_eq!(reply.status, 400, "body {body}: {}", reply.text());
        let error = assert_error(&reply, 400, "invalid_request");
        assert_message_names(&error, "text");
    }
    let array = call("POST", &town.path("/mayor/message"))
        .json(&json!(["hi"]))
        .send();
    assert_error(&array, 400, "invalid_request");
    let malformed = call("POST", &town.path("/mayor/message"))
        .header("Content-Type", "application/json")
        .body("{\"text\": \"hi")
        .send();
    assert_error(&malformed, 400, "invalid_json");
    town.assert_unchanged(&town_before);
    mayor.assert_unchanged(&mayor_before);
}

#[test]
fn other_methods_are_not_allowed() {
    let town = Town::fresh("mayor-methods");
    let (mayor, _) = mayor_with_history(&town);
    let before = mayor.state();
    for method in ["GET", "PUT", "DELETE"] {
        let reply = call(method, &town.path("/mayor/message"))
            .json(&json!({"text": "hi"}))
            .send();
        assert_not_allowed(&reply, &["POST"]);
    }
    mayor.assert_unchanged(&before);
}

#[test]
fn wrong_or_foreign_tokens_are_refused_and_change_nothing() {
    let town = Town::fresh("mayor-auth");
    let (mayor, _) = mayor_with_history(&town);
    let town_before = town.state();
    let mayor_before = mayor.state();
    let path = town.path("/mayor/message");
    let body = json!({"text": "let me in"});
    let foreign = call("POST", &path)
        .token(&foreign_token())
        .json(&body)
        .send();
    assert_error(&foreign, 401, "unauthorized");
    let elsewhere = call("POST", &path)
        .token(&town_token(&unique_id("elsewhere")))
        .json(&body)
        .send();
    assert_error(&elsewhere, 403, "forbidden");
    town.assert_unchanged(&town_before);
    mayor.assert_unchanged(&mayor_before);
    let own = call("POST", &path)
        .token(&town_token(&town.id))
        .json(&body)
        .send();
    assert_eq!(own.ok()["action"], json!("redispatch"));
}
