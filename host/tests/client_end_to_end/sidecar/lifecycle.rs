//! Its stop and its start: SIGTERM flushes everything within the budget (else a distinct exit
//! code); a sidecar that cannot work refuses to start, with a clear message.

use std::time::Duration;

use serde_json::json;
use stasis_client::exit;

use super::harness::{Setup, SidecarProcess, read_log, snapshot_head, test_numbers, wait_for_log};
use super::{PATIENCE, Rig};
use crate::helpers::append_rows;

#[test]
fn sigterm_flushes_what_is_held_pushes_a_last_snapshot_and_exits_zero() {
    let rig = Rig::new();
    // A long linger: the events stay in the sidecar until the signal.
    let sidecar = rig.sidecar(&["--linger", "60s", "--snapshot-interval", "1h"]);
    for n in 0..20 {
        rig.kilo
            .emit("test.n", json!({"sessionID": "ses_a", "n": n}));
    }
    append_rows(&rig.db, 7);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        test_numbers(&read_log(&rig.stasis.base)).is_empty(),
        "still held"
    );

    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert!(
        exit.took < Duration::from_secs(30),
        "the signal ended the linger: {:?}",
        exit.took
    );
    let log = read_log(&rig.stasis.base);
    assert_eq!(test_numbers(&log), (0..20).collect::<Vec<_>>());
    let (status, version, watermark) = snapshot_head(&rig.stasis.base);
    assert_eq!((status, version), (200, Some(1)), "the last snapshot");
    assert_eq!(watermark, log.last().and_then(|e| e["seq"].as_u64()));
    assert_eq!(exit.summary["outcome"], "stopped");
    assert_eq!(exit.summary["events_forwarded"], log.len());
    assert_eq!(exit.summary["snapshots_pushed"], 1);
}

#[test]
fn a_stop_that_cannot_reach_stasis_within_the_budget_exits_with_its_own_code() {
    let mut rig = Rig::new();
    let sidecar = rig.sidecar(&["--shutdown-budget", "2s"]);
    wait_for_log(&rig.stasis.base, PATIENCE, |log| !log.is_empty());
    rig.stasis.kill_hard();
    rig.kilo
        .emit("test.n", json!({"sessionID": "ses_a", "n": 0}));
    std::thread::sleep(Duration::from_millis(300));
    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(
        exit.code,
        Some(i32::from(exit::OVER_BUDGET)),
        "{}",
        exit.stderr
    );
    assert!(exit.took < Duration::from_secs(10), "{:?}", exit.took);
    assert!(
        exit.stderr.contains("were not forwarded"),
        "{}",
        exit.stderr
    );
    assert!(
        exit.stderr.contains("the last snapshot was not pushed"),
        "{}",
        exit.stderr
    );
    assert_eq!(exit.summary["outcome"], "over_budget");
}

/// Starts a sidecar that should refuse to start; answers its exit code and stderr.
fn refused_start<'a>(
    rig: &'a Rig,
    configure: impl FnOnce(&mut Setup<'a>),
) -> (Option<i32>, String) {
    let mut setup = rig.setup().with(&["--start-timeout", "1s"]);
    configure(&mut setup);
    let exit = SidecarProcess::spawn(&setup).wait_exit(PATIENCE);
    assert_eq!(exit.summary["outcome"], "failed", "{}", exit.stderr);
    (exit.code, exit.stderr)
}

#[test]
fn a_sidecar_that_cannot_work_refuses_to_start_with_a_clear_message() {
    let rig = Rig::new();

    let (code, stderr) = refused_start(&rig, |s| s.runtime_url = "http://127.0.0.1:9");
    assert_eq!(code, Some(i32::from(exit::UNAVAILABLE)), "{stderr}");
    assert!(stderr.contains("no healthy answer within 1s"), "{stderr}");

    // Another container id: this container's token file (written by the sidecars above) would
    // otherwise stand in for the forged token.
    let (code, stderr) = refused_start(&rig, |s| {
        s.token = "stasis_v1.admin.forged".into();
        s.container_id = "c-forged-token";
    });
    assert_eq!(code, Some(i32::from(exit::REFUSED)), "{stderr}");
    assert!(stderr.contains("401 unauthorized"), "{stderr}");

    let junk = rig.state_dir.with_file_name("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database, it only has the name of one",
    )
    .expect("junk");
    let (code, stderr) = refused_start(&rig, |s| s.db = &junk);
    assert_eq!(code, Some(i32::from(exit::LOCAL)), "{stderr}");
    assert!(
        stderr.contains("junk.db") && stderr.contains("not a database"),
        "{stderr}"
    );

    let missing = rig.state_dir.with_file_name("missing.db");
    let (code, stderr) = refused_start(&rig, |s| s.db = &missing);
    assert_eq!(code, Some(i32::from(exit::LOCAL)), "{stderr}");
    assert!(stderr.contains("no database file there"), "{stderr}");

    let (code, stderr) = refused_start(&rig, |s| s.container_id = "no/slashes");
    assert_eq!(code, Some(i32::from(exit::LOCAL)), "{stderr}");
    assert!(stderr.contains("invalid container id"), "{stderr}");

    let holder = rig.sidecar(&[]);
    let (code, stderr) = refused_start(&rig, |_| {});
    assert_eq!(code, Some(i32::from(exit::LOCAL)), "{stderr}");
    assert!(stderr.contains("another sidecar holds"), "{stderr}");
    drop(holder);
}
