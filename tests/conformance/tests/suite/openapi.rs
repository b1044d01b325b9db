//! `GET /openapi.json`: public, OpenAPI 3.1, and it describes every route
//! `docs/http-api.md` documents, each with its error codes over the shared
//! error schema. (Every other case's responses are checked against it by
//! the client layer, `stasis_conformance::openapi`.)
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::{Value, call};

fn document() -> Value {
    let reply = call("GET", "/openapi.json").no_token().send();
    assert_eq!(reply.status, 200, "{}", reply.text());
    let content_type = reply.header("content-type").unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    reply.json()
}

#[test]
fn the_document_is_public_and_openapi_3_1() {
    let document = document();
    assert_eq!(document["openapi"], "3.1.0");
    let operation = &document["paths"]["/openapi.json"]["get"];
    assert_eq!(operation["security"], serde_json::json!([]), "public");
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
}

#[test]
fn every_documented_route_is_described_with_its_methods() {
    let agent = "/api/towns/{town}/rigs/{rig}/agents/{agent}";
    let expected: &[(String, &[&str])] = &[
        ("/healthz".into(), &["get", "head"]),
        ("/livez".into(), &["get", "head"]),
        ("/metrics".into(), &["get", "head"]),
        ("/ui".into(), &["get", "head"]),
        ("/ui/style.css".into(), &["get", "head"]),
        ("/ui/app.js".into(), &["get", "head"]),
        ("/ui/api.js".into(), &["get", "head"]),
        ("/ui/views.js".into(), &["get", "head"]),
        ("/ui/tail.js".into(), &["get", "head"]),
        ("/ui/dom.js".into(), &["get", "head"]),
        ("/ui/history.js".into(), &["get", "head"]),
        ("/ui/lineage.js".into(), &["get", "head"]),
        ("/ui/actions.js".into(), &["get", "head"]),
        ("/api/token/refresh".into(), &["post"]),
        ("/api/towns/{town}".into(), &["get"]),
        ("/api/towns/{town}/container-eviction".into(), &["post"]),
        ("/api/towns/{town}/heartbeat".into(), &["post"]),
        (
            "/api/towns/{town}/container-registry".into(),
            &["get", "put"],
        ),
        (
            "/api/towns/{town}/container-registry/agents/{rig}/{agent}".into(),
            &["put", "delete"],
        ),
        ("/api/towns/{town}/events".into(), &["get"]),
        ("/api/towns/{town}/agents".into(), &["get"]),
        ("/api/towns/{town}/mayor/message".into(), &["post"]),
        ("/api/towns/{town}/container-token".into(), &["post"]),
        (agent.into(), &["get", "put", "delete"]),
        (format!("{agent}/events"), &["get", "post"]),
        (format!("{agent}/sessions"), &["get"]),
        (
            format!("{agent}/sessions/{{session}}"),
            &["get", "put", "delete"],
        ),
        (format!("{agent}/conversation"), &["get"]),
        (format!("{agent}/checkpoint"), &["get", "put", "delete"]),
        (format!("{agent}/memory"), &["get"]),
        (format!("{agent}/memory/{{key}}"), &["get", "put", "delete"]),
        (format!("{agent}/export"), &["get"]),
        (format!("{agent}/import"), &["put"]),
        (format!("{agent}/dispatch"), &["post"]),
        (format!("{agent}/inbox"), &["post"]),
        (
            format!("{agent}/db-snapshot"),
            &["get", "put", "post", "delete"],
        ),
        (format!("{agent}/db-snapshot/missing"), &["post"]),
        (
            format!("{agent}/db-snapshot/chunks/{{sha256}}"),
            &["get", "put"],
        ),
        (format!("{agent}/db-snapshot/manifest"), &["get", "put"]),
        (format!("{agent}/workspace"), &["delete"]),
        (format!("{agent}/workspace/missing"), &["post"]),
        (
            format!("{agent}/workspace/chunks/{{sha256}}"),
            &["get", "put"],
        ),
        (format!("{agent}/workspace/manifest"), &["get", "put"]),
        (format!("{agent}/workspace/batch/upload"), &["post"]),
        (format!("{agent}/workspace/batch/fetch"), &["post"]),
        (format!("{agent}/history"), &["get"]),
        (format!("{agent}/history/pins"), &["get"]),
        (
            format!("{agent}/history/pins/{{pin}}"),
            &["get", "put", "delete"],
        ),
        (format!("{agent}/fork"), &["post"]),
        (format!("{agent}/restore"), &["post"]),
    ];
    let document = document();
    for (path, methods) in expected {
        for method in *methods {
            let operation = &document["paths"][path][method];
            assert!(operation.is_object(), "{method} {path} is not described");
        }
    }
    let described = document["paths"].as_object().map_or(0, |p| p.len());
    assert_eq!(
        described,
        expected.len() + 1,
        "and no other path but the document's"
    );
}

#[test]
fn errors_list_their_codes_over_the_shared_schema() {
    let document = document();
    let responses = &document["paths"]["/api/towns/{town}/rigs/{rig}/agents/{agent}/events"]["get"]
        ["responses"];
    let gone = &responses["410"]["content"]["application/json"]["schema"];
    assert_eq!(gone["$ref"], "#/components/schemas/ErrorBody");
    assert_eq!(
        gone["properties"]["error"]["properties"]["code"]["enum"],
        serde_json::json!(["cursor_expired"])
    );
    let unauthorized = &responses["401"];
    assert_eq!(
        unauthorized["headers"]["WWW-Authenticate"]["required"],
        true
    );
    let sse = &responses["200"]["content"]["text/event-stream"];
    assert!(
        sse.is_object(),
        "the live tail is described by its media type"
    );
}
