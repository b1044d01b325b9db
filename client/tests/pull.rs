//! `snapshot pull` against a mock server: what reaches the disk when a pull succeeds, finds
//! nothing, is retried, or fails. A failed or interrupted pull must leave the old file intact
//! and no temporary file behind.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::sync::atomic::{AtomicU32, Ordering};

use stasis_client::AgentRef;
use stasis_client::snapshot::{PullOptions, PullOutcome, pull};
use support::{Mock, Response, entries, sample_db};

/// A pull of the whole file in one GET (the path these tests exercise).
fn whole_file() -> PullOptions {
    PullOptions {
        whole_file: true,
        ..PullOptions::default()
    }
}

fn mayor() -> AgentRef {
    AgentRef::new("t1", "main", "mayor").expect("ids")
}

fn snapshot_response(bytes: &[u8], sha: &str) -> Response {
    Response::new(200)
        .header("Content-Type", "application/octet-stream")
        .header("X-Stasis-Sha256", sha)
        .header("ETag", &format!("\"{sha}\""))
        .header("X-Stasis-Snapshot-Version", "4")
        .header("X-Stasis-Event-Seq", "120")
        .body(bytes.to_vec())
}

#[test]
fn a_pull_writes_the_verified_bytes_and_removes_stale_sqlite_files() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, sha) = sample_db(src.path(), "src.db", 50);
    let served = (bytes.clone(), sha.clone());
    let mock = Mock::start(move |_| snapshot_response(&served.0, &served.1));

    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("home/.local/share/kilo/kilo.db");
    std::fs::create_dir_all(out.parent().expect("parent")).expect("dirs");
    std::fs::write(&out, b"old database").expect("old");
    std::fs::write(out.with_file_name("kilo.db-wal"), b"old wal").expect("wal");
    std::fs::write(out.with_file_name("kilo.db-shm"), b"old shm").expect("shm");

    let outcome = pull(&mock.client(), &mayor(), &out, &whole_file()).expect("pull");
    let PullOutcome::Pulled(pulled) = outcome else {
        unreachable!("expected a pulled snapshot, got {outcome:?}")
    };
    assert_eq!(pulled.sha256, sha);
    assert_eq!(pulled.size, bytes.len() as u64);
    assert_eq!(pulled.version, Some(4));
    assert_eq!(pulled.event_seq, Some(120));
    assert!(!pulled.unchanged);
    assert_eq!(std::fs::read(&out).expect("read"), bytes);
    assert_eq!(entries(out.parent().expect("parent")), ["kilo.db"]);

    let request = &mock.requests()[0];
    assert_eq!(request.method, "GET");
    assert_eq!(
        request.path(),
        "/api/towns/t1/rigs/main/agents/mayor/db-snapshot"
    );
    assert_eq!(request.header("authorization"), Some("Bearer test-token"));
    // The old file had a WAL beside it, so its bytes alone were not offered as current.
    assert_eq!(request.header("if-none-match"), None);
}

#[test]
fn a_sha_mismatch_leaves_the_old_file_and_no_temporary_file() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, _) = sample_db(src.path(), "src.db", 50);
    let wrong = "0".repeat(64);
    let mock = Mock::start(move |_| snapshot_response(&bytes, &wrong));

    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    std::fs::write(&out, b"old database").expect("old");
    std::fs::write(dir.path().join("kilo.db-wal"), b"old wal").expect("wal");
    let error = pull(&mock.client(), &mayor(), &out, &whole_file()).expect_err("a mismatch fails");
    assert_eq!(error.exit_code(), stasis_client::exit::INTEGRITY);
    assert_eq!(std::fs::read(&out).expect("read"), b"old database");
    assert_eq!(entries(dir.path()), ["kilo.db", "kilo.db-wal"]);
    assert_eq!(
        mock.requests().len(),
        1,
        "an integrity failure is not retried"
    );
}

#[test]
fn a_connection_cut_mid_body_is_retried_without_leaving_partial_files() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, sha) = sample_db(src.path(), "src.db", 400);
    let calls = AtomicU32::new(0);
    let served = bytes.clone();
    let mock = Mock::start(move |_| {
        let response = snapshot_response(&served, &sha);
        if calls.fetch_add(1, Ordering::SeqCst) < 2 {
            response.truncated(served.len() / 2)
        } else {
            response
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    let outcome = pull(&mock.client(), &mayor(), &out, &whole_file()).expect("pull");
    assert!(matches!(outcome, PullOutcome::Pulled(_)));
    assert_eq!(std::fs::read(&out).expect("read"), bytes);
    assert_eq!(entries(dir.path()), ["kilo.db"]);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn a_pull_that_keeps_breaking_gives_up_and_leaves_nothing() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, sha) = sample_db(src.path(), "src.db", 400);
    let mock = Mock::start(move |_| snapshot_response(&bytes, &sha).truncated(1000));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    std::fs::write(&out, b"old database").expect("old");
    let error = pull(&mock.client(), &mayor(), &out, &whole_file()).expect_err("gives up");
    assert!(
        matches!(error, stasis_client::Error::GaveUp { attempts: 4, .. }),
        "{error}"
    );
    assert_eq!(error.exit_code(), stasis_client::exit::UNAVAILABLE);
    assert_eq!(std::fs::read(&out).expect("read"), b"old database");
    assert_eq!(entries(dir.path()), ["kilo.db"]);
}

#[test]
fn no_snapshot_is_an_outcome_and_writes_nothing() {
    let mock =
        Mock::start(|_| Response::error(404, "snapshot_not_found", "the agent has no snapshot"));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    let outcome = pull(&mock.client(), &mayor(), &out, &whole_file()).expect("pull");
    assert_eq!(outcome, PullOutcome::NoSnapshot);
    assert!(entries(dir.path()).is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn snapshot_propagating_is_retried_after_its_retry_after() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, sha) = sample_db(src.path(), "src.db", 20);
    let calls = AtomicU32::new(0);
    let served = bytes.clone();
    let mock = Mock::start(move |_| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            Response::json(
                503,
                &serde_json::json!({"error": {"code": "snapshot_propagating",
                    "message": "not visible yet", "retry_after": 1}}),
            )
            .header("Retry-After", "1")
        } else {
            snapshot_response(&served, &sha)
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    let started = std::time::Instant::now();
    let outcome = pull(&mock.client(), &mayor(), &out, &whole_file()).expect("pull");
    assert!(matches!(outcome, PullOutcome::Pulled(_)));
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(1),
        "Retry-After was honoured"
    );
    assert_eq!(std::fs::read(&out).expect("read"), bytes);
}

#[test]
fn a_current_local_copy_is_offered_and_kept_on_304() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, bytes, sha) = sample_db(src.path(), "src.db", 20);
    let expected = format!("\"{sha}\"");
    let mock = Mock::start(move |request| {
        if request.header("if-none-match") == Some(expected.as_str()) {
            Response::new(304).header("X-Stasis-Snapshot-Version", "9")
        } else {
            Response::error(500, "unexpected", "no If-None-Match")
        }
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    std::fs::write(&out, &bytes).expect("local copy");
    let outcome = pull(&mock.client(), &mayor(), &out, &whole_file()).expect("pull");
    let PullOutcome::Pulled(pulled) = outcome else {
        unreachable!("expected a pulled snapshot, got {outcome:?}")
    };
    assert!(pulled.unchanged);
    assert_eq!(pulled.version, Some(9));
    assert_eq!(pulled.sha256, sha);
    assert_eq!(entries(dir.path()), ["kilo.db"]);
}

#[test]
fn a_refusal_is_reported_with_the_server_code_and_not_retried() {
    let mock = Mock::start(|_| Response::error(403, "forbidden", "token for another town"));
    let dir = tempfile::tempdir().expect("tempdir");
    let error = pull(
        &mock.client(),
        &mayor(),
        &dir.path().join("kilo.db"),
        &whole_file(),
    )
    .expect_err("refused");
    assert_eq!(error.status(), Some(403));
    assert_eq!(error.exit_code(), stasis_client::exit::REFUSED);
    assert!(
        error
            .to_string()
            .contains("forbidden: token for another town"),
        "{error}"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_404_for_a_path_stasis_does_not_serve_is_an_error_not_an_empty_agent() {
    // A STASIS_URL with a wrong prefix reaches stasis, which answers `not_found`.
    let mock = Mock::start(|_| Response::error(404, "not_found", "no such endpoint"));
    let dir = tempfile::tempdir().expect("tempdir");
    let error = pull(
        &mock.client(),
        &mayor(),
        &dir.path().join("kilo.db"),
        &whole_file(),
    )
    .expect_err("not a missing snapshot");
    assert_eq!(error.code(), Some("not_found"));
    assert_eq!(error.exit_code(), stasis_client::exit::REFUSED);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_corrupt_stored_snapshot_is_not_retried_and_writes_nothing() {
    let mock = Mock::start(|_| Response::error(500, "snapshot_corrupt", "bytes do not match"));
    let dir = tempfile::tempdir().expect("tempdir");
    let error = pull(
        &mock.client(),
        &mayor(),
        &dir.path().join("kilo.db"),
        &whole_file(),
    )
    .expect_err("corrupt");
    assert_eq!(error.exit_code(), stasis_client::exit::INTEGRITY);
    assert_eq!(mock.requests().len(), 1);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_404_that_is_not_from_stasis_is_an_error_not_an_empty_agent() {
    let mock = Mock::start(|_| {
        Response::new(404)
            .header("Content-Type", "text/html")
            .body("<html>Not Found</html>")
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let error = pull(
        &mock.client(),
        &mayor(),
        &dir.path().join("kilo.db"),
        &whole_file(),
    )
    .expect_err("not stasis");
    assert_eq!(error.status(), Some(404));
    assert_eq!(error.exit_code(), stasis_client::exit::REFUSED);
    assert!(entries(dir.path()).is_empty());
}
