//! The fake model over real HTTP: what it streams for each kind of
//! request, and what it records.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use serde_json::{Value, json};
use stasis_kilo_harness::{FakeModel, Reply, Script};

fn script() -> Script {
    Script::new()
        .when("plan the day", Reply::text("Coffee, then  code."))
        .when("run it", Reply::bash("echo hi", "Print hi"))
        .after_tool(Reply::text("It printed hi."))
        .title("Day plan")
}

/// Posts a chat request and returns the JSON of each `data:` event, and
/// whether the stream ended with `[DONE]`.
fn chat(model: &FakeModel, messages: Value) -> (Vec<Value>, bool) {
    let body = json!({"model": "fake", "stream": true, "messages": messages}).to_string();
    let text = ureq::post(format!("{}/chat/completions", model.base_url()))
        .header("Content-Type", "application/json")
        .send(body.as_str())
        .expect("a chat answer")
        .into_body()
        .read_to_string()
        .expect("the stream");
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    let done = data.last() == Some(&"[DONE]");
    let chunks = data
        .iter()
        .filter(|d| **d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("a JSON chunk"))
        .collect();
    (chunks, done)
}

fn contents(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect()
}

fn finish_reason(chunks: &[Value]) -> Option<&str> {
    chunks.last()?["choices"][0]["finish_reason"].as_str()
}

#[test]
fn the_model_is_listed() {
    let model = FakeModel::start(script()).expect("model");
    let models: Value = ureq::get(format!("{}/models", model.base_url()))
        .call()
        .expect("models")
        .into_body()
        .read_json()
        .expect("JSON");
    assert_eq!(models["data"][0]["id"], "fake");
}

#[test]
fn a_text_reply_streams_word_by_word_then_stops() {
    let model = FakeModel::start(script()).expect("model");
    let user = json!([{"role": "system", "content": "You are kilo"},
                      {"role": "user", "content": [{"type": "text", "text": "please plan the day"}]}]);
    let (chunks, done) = chat(&model, user);
    assert_eq!(contents(&chunks), ["Coffee,", " then", "  code."]);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[0]["object"], "chat.completion.chunk");
    assert_eq!(finish_reason(&chunks), Some("stop"));
    assert!(done);
}

#[test]
fn a_bash_reply_is_one_tool_call_chunk() {
    let model = FakeModel::start(script()).expect("model");
    let (chunks, done) = chat(&model, json!([{"role": "user", "content": "run it"}]));
    let call = &chunks[0]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "bash");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().expect("a string"))
            .expect("JSON arguments");
    assert_eq!(
        arguments,
        json!({"command": "echo hi", "description": "Print hi"})
    );
    assert_eq!(finish_reason(&chunks), Some("tool_calls"));
    assert!(done);
}

#[test]
fn a_tool_result_gets_the_after_tool_reply_not_another_call() {
    let model = FakeModel::start(script()).expect("model");
    let (chunks, _) = chat(
        &model,
        json!([{"role": "user", "content": "run it"},
               {"role": "assistant", "content": null, "tool_calls": []},
               {"role": "tool", "tool_call_id": "call_1", "content": "hi\n"}]),
    );
    assert_eq!(contents(&chunks).concat(), "It printed hi.");
}

#[test]
fn the_title_generator_gets_the_title_and_anything_else_the_fallback() {
    let model = FakeModel::start(script()).expect("model");
    let title = json!([{"role": "system", "content": "You are a title generator. ..."},
                       {"role": "user", "content": "run it"}]);
    assert_eq!(contents(&chat(&model, title).0).concat(), "Day plan");
    let other = json!([{"role": "user", "content": "something else"}]);
    assert_eq!(contents(&chat(&model, other).0).concat(), "OK.");
}

#[test]
fn every_request_is_recorded_with_its_messages() {
    let model = FakeModel::start(script()).expect("model");
    chat(&model, json!([{"role": "user", "content": "first"}]));
    chat(
        &model,
        json!([{"role": "user", "content": "first"}, {"role": "assistant", "content": "OK."},
               {"role": "user", "content": [{"type": "text", "text": "plan"}, {"type": "text", "text": " the day"}]}]),
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let roles: Vec<&str> = requests[1]
        .messages
        .iter()
        .map(|m| m.role.as_str())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    assert_eq!(requests[1].last_user_text(), Some("plan the day"));
    assert_eq!(requests[1].body["model"], "fake");
}

#[test]
fn a_body_that_is_not_json_is_recorded_and_answered() {
    let model = FakeModel::start(script()).expect("model");
    let answer = ureq::post(format!("{}/chat/completions", model.base_url()))
        .send("not json")
        .expect("an answer")
        .into_body()
        .read_to_string()
        .expect("a body");
    assert!(answer.contains("OK."), "{answer}");
    assert_eq!(model.requests()[0].body, Value::Null);
}
