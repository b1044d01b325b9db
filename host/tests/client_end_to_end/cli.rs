//! d. the binary.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use stasis_client::exit;

use crate::helpers::{admin_token, assert_consistent_prefix, create_db, sha256_file, start_server};
use crate::support::Server;

/// Runs the `stasis-client` binary through cargo (the host package cannot name another
/// package's binary), built without TLS: the server is plain http on loopback.
fn stasis_client_cli(server: &Server, token: &str, args: &[&str]) -> Output {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(workspace).args([
        "run",
        "-q",
        "--locked",
        "-p",
        "stasis-client",
        "--no-default-features",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    command
        .arg("--")
        .args(args)
        .env("STASIS_URL", &server.base)
        .env("STASIS_TOKEN", token)
        .output()
        .expect("cargo runs stasis-client")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_cli_pushes_and_pulls_against_the_real_server_and_fails_clearly_on_a_refusal() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("kilo.db");
    create_db(&db, 300, "wal");
    let db = db.to_str().expect("utf-8 path");
    let agent_args = ["--town", "e2e-cli", "--rig", "hq", "--agent", "mayor"];
    let token = admin_token();

    let push = [
        &["snapshot", "push"][..],
        &agent_args,
        &["--db", db, "--event-seq", "0"],
    ]
    .concat();
    let output = stasis_client_cli(&server, &token, &push);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let receipt: Value = serde_json::from_slice(&output.stdout).expect("a JSON receipt");
    assert_eq!(
        (receipt["version"].as_u64(), receipt["storage"].as_str()),
        (Some(1), Some("inline"))
    );

    let out = work.path().join("pulled/kilo.db");
    let out_arg = out.to_str().expect("utf-8 path");
    let pull = [&["snapshot", "pull"][..], &agent_args, &["--out", out_arg]].concat();
    let output = stasis_client_cli(&server, &token, &pull);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let pulled: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(pulled["sha256"], receipt["sha256"]);
    assert_eq!(Some(sha256_file(&out).as_str()), receipt["sha256"].as_str());
    assert_eq!(assert_consistent_prefix(&out), 300);

    let missing = [
        "snapshot", "pull", "--town", "e2e-cli", "--rig", "hq", "--agent", "nobody", "--out",
        out_arg,
    ];
    let output = stasis_client_cli(&server, &token, &missing);
    assert_eq!(
        output.status.code(),
        Some(i32::from(exit::NO_SNAPSHOT)),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());

    let forged = format!("stasis_v1.admin.{}", "0".repeat(64));
    let output = stasis_client_cli(&server, &forged, &push);
    assert_eq!(output.status.code(), Some(i32::from(exit::REFUSED)));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("401 unauthorized"),
        "a clear message: {stderr}"
    );
    assert!(
        !stderr.contains("retrying"),
        "a refusal is not retried: {stderr}"
    );
}
