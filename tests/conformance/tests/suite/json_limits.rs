//! JSON from outside must be readable back: a number outside a 64-bit
//! float's range (`1e999`), nesting deeper than 64 levels or a string
//! escape of a lone UTF-16 surrogate (`"\ud800"`) is refused with
//! 400 `invalid_request` naming where it is, in every field that stores a
//! JSON value (event data, checkpoint, memory, agent and session metadata,
//! an import manifest), and nothing changes. Before this rule such values
//! were accepted and then broke the reads, exports and dispatches built
//! from them.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::Agent;
use stasis_conformance::{Reply, assert_error, call, json};

/// A JSON text nested `depth` arrays deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// Sends `body` (raw JSON text) and expects 400 `invalid_request` whose
/// message names `place`.
fn assert_refused(reply: &Reply, place: &str) {
    let error = assert_error(reply, 400, "invalid_request");
    let message = error
        .get("message")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    assert!(message.contains(place), "{message:?} names {place:?}");
}

fn send(agent: &Agent, method: &str, suffix: &str, body: &str) -> Reply {
    call(method, &agent.path(suffix))
        .header("content-type", "application/json")
        .body(body.as_bytes().to_vec())
        .send()
}

#[test]
fn out_of_range_numbers_and_deep_nesting_are_refused_in_every_stored_document() {
    let agent = Agent::fresh("json-limits");
    agent.register("polecat");
    agent
        .log
        .append(json!([{"type": "seed", "session_id": "s1"}]));
    let before = agent.state();
    let too_deep = nested(65);
    let cases: Vec<(&str, &str, String, &str)> = vec![
        (
            "POST",
            "/events",
            r#"{"events":[{"type":"a"},{"type":"b","data":{"n":[1,1e999]}}]}"#.into(),
            "events[1].data",
        ),
        (
            "POST",
            "/events",
            format!(r#"{{"events":[{{"type":"a","data":{too_deep}}}]}}"#),
            "deeper than 64",
        ),
        (
            "PUT",
            "/checkpoint",
            r#"{"plan":{"cost":-1e400}}"#.into(),
            ".plan.cost",
        ),
        ("PUT", "/checkpoint", too_deep.clone(), "deeper than 64"),
        ("PUT", "/memory/k", "1e999".into(), "1e999"),
        (
            "PUT",
            "/memory/k",
            r#"{"note":"half of \ud83d an emoji"}"#.into(),
            ".note",
        ),
        (
            "POST",
            "/events",
            r#"{"events":[{"type":"a","data":{"text":"\udc00"}}]}"#.into(),
            "surrogate",
        ),
        (
            "PUT",
            "",
            r#"{"role":"polecat","metadata":{"x":1e999}}"#.into(),
            ".metadata.x",
        ),
        (
            "PUT",
            "/sessions/s1",
            format!(r#"{{"metadata":{too_deep}}}"#),
            "metadata",
        ),
        (
            "PUT",
            "/import",
            r#"{"events":[{"seq":1,"type":"a","data":1e999}]}"#.into(),
            "events[0].data",
        ),
    ];
    for (method, suffix, body, place) in &cases {
        let reply = send(&agent, method, suffix, body);
        if *suffix == "/import" {
            let error = assert_error(&reply, 400, "invalid_manifest");
            let message = error.get("message").and_then(|m| m.as_str());
            assert!(
                message.is_some_and(|m| m.contains(place)),
                "{message:?} names {place:?}"
            );
        } else {
            assert_refused(&reply, place);
        }
        agent.assert_unchanged(&before);
    }
}

#[test]
fn values_at_the_edge_of_the_rule_are_stored_and_served_byte_for_byte() {
    let agent = Agent::fresh("json-limits-edge");
    // The checkpoint object is depth 1, so its field may nest 63 more.
    let deepest = nested(63);
    let body = format!(r#"{{"big":1.7976931348623157e308,"tiny":1e-999,"deep":{deepest}}}"#);
    let stored = send(&agent, "PUT", "/checkpoint", &body);
    assert_eq!(stored.status, 200, "{}", stored.text());
    let read = call("GET", &agent.path("/checkpoint")).send();
    assert_eq!(read.status, 200);
    assert_eq!(read.text(), body, "served as it was sent");
    let export = call("GET", &agent.path("/export")).send();
    assert_eq!(export.status, 200, "{}", export.text());
    assert!(export.text().contains(&body), "the export carries it as is");
}
