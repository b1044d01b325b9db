//! `snapshot push` against a mock server: what goes over the wire, how the receipt is checked,
//! and which failures are retried.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;
use sha2::Digest;
use stasis_client::snapshot::{PushOptions, push};
use stasis_client::{AgentRef, Error, exit};
use support::{Mock, Request, Response, sample_db};

fn polecat() -> AgentRef {
    AgentRef::new("t1", "main", "polecat-1").expect("ids")
}

/// A push of the whole file in one PUT (the path these tests exercise).
fn whole_file() -> PushOptions {
    PushOptions {
        whole_file: true,
        ..PushOptions::default()
    }
}

fn sha_of(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// The server's 201 for `request`, computed from its body.
fn stored(request: &Request) -> Response {
    let sha = sha_of(&request.body);
    Response::json(
        201,
        &json!({"version": 3, "sha256": sha, "size": request.body.len(),
                "storage": "kv", "event_watermark": 42}),
    )
    .header("ETag", &format!("\"{sha}\""))
}

#[test]
fn a_push_uploads_a_consistent_copy_with_its_hash_and_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 300);
    let mock = Mock::start(stored);
    let options = PushOptions {
        event_seq: Some(42),
        if_match: Some("abc".into()),
        ..whole_file()
    };
    let receipt = push(&mock.client(), &polecat(), &db, &options).expect("push");

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "PUT");
    assert_eq!(
        request.path(),
        "/api/towns/t1/rigs/main/agents/polecat-1/db-snapshot"
    );
    assert_eq!(
        request.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(
        request.header("content-length"),
        Some(request.body.len().to_string().as_str())
    );
    assert_eq!(
        request.header("x-stasis-sha256"),
        Some(sha_of(&request.body).as_str())
    );
    assert_eq!(request.header("x-stasis-event-seq"), Some("42"));
    assert_eq!(request.header("if-match"), Some("\"abc\""));
    assert_eq!(request.header("authorization"), Some("Bearer test-token"));

    // The uploaded bytes are the database: same rows, intact.
    let copy = dir.path().join("uploaded.db");
    std::fs::write(&copy, &request.body).expect("write");
    let conn = rusqlite::Connection::open(&copy).expect("open");
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
        .expect("count");
    assert_eq!(rows, 300);

    assert_eq!(receipt.version, 3);
    assert_eq!(receipt.sha256, sha_of(&request.body));
    assert_eq!(receipt.storage.as_deref(), Some("kv"));
    assert_eq!(receipt.event_watermark, Some(42));
    assert_eq!(receipt.etag, Some(format!("\"{}\"", receipt.sha256)));
}

#[test]
fn a_receipt_with_another_hash_is_an_integrity_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 10);
    let mock = Mock::start(|request| {
        Response::json(
            201,
            &json!({"version": 1, "sha256": "f".repeat(64), "size": request.body.len(),
                    "storage": "inline", "event_watermark": null}),
        )
    });
    let error = push(&mock.client(), &polecat(), &db, &whole_file()).expect_err("mismatch");
    assert!(matches!(error, Error::Integrity { .. }), "{error}");
    assert_eq!(error.exit_code(), exit::INTEGRITY);
}

#[test]
fn server_errors_are_retried_and_the_body_is_sent_again_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 100);
    let calls = AtomicU32::new(0);
    let mock = Mock::start(move |request| match calls.fetch_add(1, Ordering::SeqCst) {
        0 => Response::error(500, "internal", "boom"),
        1 => Response::hang_up(),
        _ => stored(request),
    });
    let receipt = push(&mock.client(), &polecat(), &db, &whole_file()).expect("push");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(sha_of(&request.body), receipt.sha256);
    }
}

#[test]
fn a_refusal_is_not_retried_and_keeps_the_server_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 10);
    let mock = Mock::start(|_| {
        Response::json(
            413,
            &json!({"error": {"code": "body_too_large", "message": "over 26214400 bytes",
                              "limit": 26_214_400}}),
        )
    });
    let error = push(&mock.client(), &polecat(), &db, &whole_file()).expect_err("refused");
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(error.exit_code(), exit::REFUSED);
    match error {
        Error::Api {
            status,
            code,
            detail,
            ..
        } => {
            assert_eq!((status, code.as_str()), (413, "body_too_large"));
            assert_eq!(detail.and_then(|d| d["limit"].as_u64()), Some(26_214_400));
        }
        other => unreachable!("expected an API error, got {other}"),
    }
}

#[test]
fn a_lost_answer_then_412_counts_as_stored_when_the_current_snapshot_is_ours() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 10);
    let stored_sha: Mutex<Option<String>> = Mutex::new(None);
    let mock = Mock::start(move |request| {
        let mut current = stored_sha.lock().expect("lock");
        match request.method.as_str() {
            "PUT" if current.is_none() => {
                // Stored, but the answer never arrives.
                *current = Some(sha_of(&request.body));
                Response::hang_up()
            }
            "PUT" => Response::error(412, "precondition_failed", "the snapshot changed"),
            "HEAD" => {
                let sha = current.clone().unwrap_or_default();
                Response::new(200)
                    .header("X-Stasis-Sha256", &sha)
                    .header("X-Stasis-Snapshot-Version", "8")
                    .header("ETag", &format!("\"{sha}\""))
            }
            _ => Response::error(405, "method_not_allowed", "no"),
        }
    });
    let options = PushOptions {
        if_match: Some("\"old\"".into()),
        ..whole_file()
    };
    let receipt = push(&mock.client(), &polecat(), &db, &options).expect("push");
    assert_eq!(receipt.version, 8);
    assert_eq!(receipt.storage, None);
    let methods: Vec<String> = mock.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["PUT", "PUT", "HEAD"]);
}
