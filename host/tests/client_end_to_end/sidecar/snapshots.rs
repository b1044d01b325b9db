//! kilo.db follows the turns: pushed once a turn's `session.idle` is stored (watermarked with
//! the newest stored seq), every interval while it changes, and never when it did not change.

use std::time::{Duration, Instant};

use serde_json::json;
use stasis_client::snapshot::{self, PullOptions, PullOutcome};
use stasis_client::{AgentRef, Client, Config};

use super::harness::{self, of_type, read_log, snapshot_head};
use super::{PATIENCE, Rig};
use crate::helpers::{admin_token, append_rows, assert_consistent_prefix, max_id};

/// Waits until stasis holds snapshot `version`; answers its watermark.
fn wait_for_version(rig: &Rig, version: u64) -> Option<u64> {
    let until = Instant::now() + PATIENCE;
    loop {
        let (status, stored, watermark) = snapshot_head(&rig.stasis.base);
        if status == 200 && stored >= Some(version) {
            assert_eq!(stored, Some(version), "one push per trigger");
            return watermark;
        }
        assert!(
            Instant::now() < until,
            "no snapshot v{version} (HEAD {status})"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Pulls the stored snapshot and checks it row by row; answers its row count.
fn stored_rows(rig: &Rig) -> i64 {
    let client = Client::new(Config::new(&rig.stasis.base, Some(admin_token())).expect("config"));
    let who = AgentRef::new(harness::TOWN, harness::RIG, harness::AGENT).expect("ids");
    let out = rig.state_dir.join("pulled.db");
    let pulled = snapshot::pull(&client, &who, &out, &PullOptions::default()).expect("pull");
    assert!(matches!(pulled, PullOutcome::Pulled(_)));
    assert_consistent_prefix(&out)
}

fn local_rows(rig: &Rig) -> i64 {
    max_id(&rusqlite::Connection::open(&rig.db).expect("the live db"))
}

#[test]
fn a_turn_end_pushes_a_snapshot_watermarked_with_the_turns_last_seq() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&["--snapshot-interval", "1h"]);
    append_rows(&rig.db, 10);
    rig.kilo.turn("ses_a", "hello", "hi there");
    let watermark = wait_for_version(&rig, 1);
    let log = read_log(&rig.stasis.base);
    let idle = of_type(&log, "session.idle");
    assert_eq!(
        watermark,
        idle[0]["seq"].as_u64(),
        "the watermark covers the whole turn"
    );
    assert_eq!(stored_rows(&rig), local_rows(&rig));

    // A turn's end that did not change the database still leaves a
    // snapshot whose watermark covers it: the same bytes, pushed again.
    rig.kilo.emit("session.idle", json!({"sessionID": "ses_a"}));
    let watermark = wait_for_version(&rig, 2);
    let log = read_log(&rig.stasis.base);
    assert_eq!(watermark, of_type(&log, "session.idle")[1]["seq"].as_u64());

    append_rows(&rig.db, 10);
    rig.kilo.turn("ses_a", "again", "and again");
    let watermark = wait_for_version(&rig, 3);
    let log = read_log(&rig.stasis.base);
    assert_eq!(watermark, of_type(&log, "session.idle")[2]["seq"].as_u64());
    assert_eq!(stored_rows(&rig), local_rows(&rig));

    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert_eq!(
        exit.summary["snapshots_pushed"], 3,
        "the unchanged database, already covered, was not pushed at the stop"
    );
}

#[test]
fn a_changing_database_is_pushed_every_interval_and_an_unchanged_one_never() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&["--snapshot-interval", "300ms"]);
    wait_for_version(&rig, 1);
    append_rows(&rig.db, 5);
    wait_for_version(&rig, 2);
    assert_eq!(stored_rows(&rig), local_rows(&rig));
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(
        snapshot_head(&rig.stasis.base).1,
        Some(2),
        "no change, no push"
    );
    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert_eq!(exit.summary["snapshots_pushed"], 2);
}
