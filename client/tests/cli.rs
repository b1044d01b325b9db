//! The `stasis-client` binary: its help, its exit codes, and what it prints where.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::process::{Command, Output};

use serde_json::json;
use support::{Mock, Request, Response, sample_db};

fn cli(url: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stasis-client"));
    command
        .args(args)
        .env_remove("STASIS_URL")
        .env_remove("STASIS_TOKEN")
        .env(
            "STASIS_CHUNK_CACHE",
            concat!(env!("CARGO_TARGET_TMPDIR"), "/cli-chunk-cache"),
        );
    if let Some(url) = url {
        command
            .env("STASIS_URL", url)
            .env("STASIS_TOKEN", "cli-token");
    }
    command.output().expect("run stasis-client")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_documents_configuration_and_exit_codes() {
    let output = cli(None, &["--help"]);
    assert!(output.status.success());
    let help = text(&output.stdout);
    for needle in [
        "STASIS_URL",
        "STASIS_TOKEN",
        "Exit codes",
        "snapshot",
        "boot",
        "drain",
        "tail",
    ] {
        assert!(help.contains(needle), "--help mentions {needle}:\n{help}");
    }
    let push_help = text(&cli(None, &["snapshot", "push", "--help"]).stdout);
    for needle in ["--event-seq", "--if-match", "--db", "--town"] {
        assert!(push_help.contains(needle), "push --help mentions {needle}");
    }
}

#[test]
fn without_a_url_it_says_so_and_exits_1() {
    let output = cli(
        None,
        &[
            "snapshot", "pull", "--town", "t", "--rig", "r", "--agent", "a", "--out", "x",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output.stderr).contains("STASIS_URL"));
}

#[test]
fn pulling_a_missing_snapshot_exits_3_and_prints_nothing_on_stdout() {
    let mock =
        Mock::start(|_| Response::error(404, "snapshot_not_found", "the agent has no snapshot"));
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("kilo.db");
    let out = out.to_str().expect("utf-8 path");
    let output = cli(
        Some(&mock.url),
        &[
            "snapshot", "pull", "--town", "t", "--rig", "r", "--agent", "a", "--out", out,
        ],
    );
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stdout.is_empty());
    assert!(text(&output.stderr).contains("no snapshot"));
    assert_eq!(
        mock.requests()[0].header("authorization"),
        Some("Bearer cli-token")
    );
}

#[test]
fn a_refusal_exits_4_with_the_server_message() {
    let mock = Mock::start(|_| Response::error(401, "unauthorized", "bad token"));
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 5);
    let db = db.to_str().expect("utf-8 path");
    let output = cli(
        Some(&mock.url),
        &[
            "snapshot", "push", "--town", "t", "--rig", "r", "--agent", "a", "--db", db,
        ],
    );
    assert_eq!(output.status.code(), Some(4));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("401 unauthorized: bad token"), "{stderr}");
}

#[test]
fn push_prints_the_receipt_as_json() {
    let mock = Mock::start(|request: &Request| {
        use sha2::Digest;
        if request.path().ends_with("/missing") {
            return Response::error(404, "not_found", "no such route");
        }
        let sha = hex::encode(sha2::Sha256::digest(&request.body));
        Response::json(
            201,
            &json!({"version": 7, "sha256": sha, "size": request.body.len(),
                    "storage": "inline", "event_watermark": 9}),
        )
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _, _) = sample_db(dir.path(), "kilo.db", 5);
    let db = db.to_str().expect("utf-8 path");
    let output = cli(
        Some(&mock.url),
        &[
            "-q",
            "snapshot",
            "push",
            "--town",
            "t",
            "--rig",
            "r",
            "--agent",
            "a",
            "--db",
            db,
            "--event-seq",
            "9",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let receipt: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(receipt["version"], 7);
    assert_eq!(receipt["storage"], "inline");
    assert_eq!(receipt["transfer"]["mode"], "whole_file");
}

#[test]
fn boot_prints_the_container_id_on_stderr_and_the_dispatches_on_stdout() {
    let mock = Mock::start(|request: &Request| {
        if request.path() == "/api/towns/t1/heartbeat" {
            Response::json(
                200,
                &json!({"draining": false, "cleared_drain": true,
                        "registry": {"container_id": "c-old", "agents": []},
                        "pending_dispatches": [{"agent_id": "mayor"}]}),
            )
        } else {
            Response::error(404, "not_found", "none")
        }
    });
    let root = tempfile::tempdir().expect("tempdir");
    let root = root.path().to_str().expect("utf-8 path");
    let output = cli(Some(&mock.url), &["boot", "--town", "t1", "--root", root]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let dispatches: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(dispatches, json!([{"agent_id": "mayor"}]));
    let stderr = text(&output.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("container_id: "))
        .expect("the container id is printed");
    assert_eq!(mock.requests()[0].json(), json!({"container_id": id}));
}

#[test]
fn fork_posts_the_point_and_prints_the_forks_record() {
    let mock = Mock::start(|request: &Request| {
        if request.method != "POST" || request.path() != "/api/towns/t/rigs/r/agents/a/fork" {
            return Response::error(404, "not_found", "no such route");
        }
        let body = request.json();
        if body != json!({"point": {"kind": "checkpoint", "version": 4}, "agent": "b", "rig": "r2"})
        {
            return Response::error(400, "invalid_request", &body.to_string());
        }
        Response::json(
            201,
            &json!({"agent_id": "b", "rig_id": "r2",
                    "forked_from": {"rig": "r", "agent": "a", "seq": 12}}),
        )
    });
    let agent = ["--town", "t", "--rig", "r", "--agent", "a"];
    let mut args = vec!["-q", "fork"];
    args.extend(agent);
    args.extend([
        "--kind",
        "checkpoint",
        "--version",
        "4",
        "--to-agent",
        "b",
        "--to-rig",
        "r2",
    ]);
    let output = cli(Some(&mock.url), &args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let record: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(record["forked_from"]["seq"], 12);
    // A point is required, and only one.
    let mut two = vec!["fork"];
    two.extend(agent);
    two.extend(["--seq", "3", "--at", "5", "--to-agent", "b"]);
    assert_eq!(cli(Some(&mock.url), &two).status.code(), Some(2));
}
