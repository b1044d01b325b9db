//! `stasis-demo` runs the spec's scenario end to end against a fresh
//! in-process host and says so step by step; when a step cannot be done it
//! exits non-zero, naming the step.
//!
//! The Mayor's kilo.db is 3 MB here instead of 20 (hashing is slow in a
//! debug build); the release binary's default run is the real size.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use std::process::{Command, Output};

fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stasis-demo"))
        .args(args)
        .env_remove("STASIS_TOKEN")
        .output()
        .expect("run stasis-demo")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_demo_runs_every_step_of_the_scenario_and_passes() {
    let output = demo(&["--mayor-db-mb", "3"]);
    let (stdout, stderr) = text(&output);
    assert!(
        output.status.success(),
        "stasis-demo failed:\n{stdout}\n{stderr}"
    );
    for heading in [
        "1. Container A boots",
        "2. Container A gets SIGTERM",
        "3. The user messages the Mayor",
        "4. A late heartbeat from dying container A",
        "5. Container B boots",
        "Summary",
    ] {
        assert!(stdout.contains(heading), "no {heading:?} in:\n{stdout}");
    }
    for result in [
        "→ 202 {\"action\":\"deferred\"}",
        "draining=true, cleared_drain=false",
        "draining=false, cleared_drain=true",
        "= A's flush, integrity ok, rows = A's",
        "the gap message last",
        "checks passed",
        "recovery",
    ] {
        assert!(stdout.contains(result), "no {result:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("FAILED"), "{stdout}");
}

#[test]
fn a_demo_that_cannot_reach_its_server_fails_naming_the_step() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let output = demo(&["--url", &url, "--mayor-db-mb", "1"]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("✗ FAILED in step 1"),
        "the failure names its step:\n{stdout}"
    );
    assert!(stderr.contains("the demo failed"), "{stderr}");
}
