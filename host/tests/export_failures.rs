//! Guards what a client sees when an export fails: before its head is sent,
//! a 500 whose body names no trap, wasm frame or path (the cause, a trap in
//! the state component here, goes to the log with the request id); after
//! it, a cut response that is not valid JSON, its cause logged the same way.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use std::{path::Path, time::Duration};
use support::{Options, Server, admin, patient_agent};

const AGENT: &str = "/api/towns/fail/rigs/r/agents/a";

fn send(server: &Server, path: &str, content_type: &str, body: &[u8]) -> u16 {
    let request = ureq::http::Request::builder()
        .method("PUT")
        .uri(format!("{}{AGENT}{path}", server.base))
        .header("authorization", admin())
        .header("content-type", content_type)
        .body(body.to_vec())
        .expect("a request");
    let response = patient_agent().run(request).expect("a response");
    response.status().as_u16()
}

fn start(data: &Path, log: &Path) -> Server {
    let options = Options {
        log_file: Some(log.to_path_buf()),
        log_filter: Some("error".into()),
        ..Options::default()
    };
    Server::start_with(data, &[], &options)
}

/// The log line naming `request_id`.
fn logged(log: &Path, request_id: &str) -> String {
    let text = std::fs::read_to_string(log).expect("log");
    text.lines()
        .find(|line| line.contains(request_id))
        .unwrap_or_else(|| panic!("no log line names {request_id}:\n{text}"))
        .to_owned()
}

#[test]
fn a_trap_before_the_export_starts_is_a_500_that_shows_none_of_it() {
    let root = tempfile::tempdir().expect("temp dir");
    let (data, log) = (root.path().join("data"), root.path().join("host.log"));
    let server = start(&data, &log);
    assert_eq!(
        send(&server, "/checkpoint", "application/json", b"{\"step\":1}"),
        200
    );
    // A checkpoint far larger than the API ever stores: reading it makes
    // the state component run out of memory, a trap.
    let db = rusqlite::Connection::open(data.join("towns/fail/rigs/r/agents/a/agent.sqlite"))
        .expect("the agent's database");
    db.busy_timeout(Duration::from_secs(10)).expect("timeout");
    db.execute(
        "UPDATE checkpoint SET document = printf('\"%s\"', hex(zeroblob(100000000)))",
        [],
    )
    .expect("a huge checkpoint");
    drop(db);

    let mut response = patient_agent()
        .get(format!("{}{AGENT}/export", server.base))
        .header("authorization", admin())
        .header("x-request-id", "probe-export-trap")
        .call()
        .expect("GET");
    assert_eq!(response.status(), 500);
    let body = response.body_mut().read_to_string().expect("body");
    assert!(body.contains("\"code\":\"internal_error\""), "{body}");
    for leak in ["trap", "wasm", "backtrace", "component", "sqlite", "/tmp"] {
        assert!(!body.contains(leak), "the body shows {leak:?}: {body}");
    }
    let line = logged(&log, "probe-export-trap");
    assert!(line.contains("trapped"), "the trap is logged: {line}");
}

#[test]
fn a_failure_after_the_export_started_cuts_it_and_is_logged() {
    let root = tempfile::tempdir().expect("temp dir");
    let (data, log) = (root.path().join("data"), root.path().join("host.log"));
    let server = start(&data, &log);
    let snapshot = vec![7u8; 2 * 1024 * 1024];
    assert_eq!(
        send(
            &server,
            "/db-snapshot",
            "application/octet-stream",
            &snapshot
        ),
        201
    );
    // The chunks rot after they were stored: their bytes no longer match
    // their sha256, which the export finds only when it reaches them.
    let chunks = data.join("kv/snapshots/fail/r/a/chunks");
    for chunk in std::fs::read_dir(&chunks).expect("the chunks").flatten() {
        let len = std::fs::metadata(chunk.path()).expect("a chunk").len();
        std::fs::write(chunk.path(), vec![8u8; len as usize]).expect("rot a chunk");
    }

    let mut response = patient_agent()
        .get(format!("{}{AGENT}/export", server.base))
        .header("authorization", admin())
        .header("x-request-id", "probe-export-cut")
        .call()
        .expect("GET");
    assert_eq!(
        response.status(),
        200,
        "the head went out before the failure"
    );
    let read = response.body_mut().read_to_vec();
    if let Ok(body) = read {
        assert!(
            serde_json::from_slice::<serde_json::Value>(&body).is_err(),
            "a cut manifest is not valid JSON: {}",
            String::from_utf8_lossy(&body)
        );
    }
    let line = logged(&log, "probe-export-cut");
    assert!(
        line.contains("snapshot_corrupt"),
        "the cause is logged: {line}"
    );
}
