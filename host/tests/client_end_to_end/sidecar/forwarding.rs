//! Exactly once and in order: on a healthy path, across a SIGKILL of stasis, and across a
//! SIGKILL of the sidecar with its batch stored but not acknowledged.

use std::time::Duration;

use serde_json::{Value, json};

use super::harness::{SidecarProcess, of_type, read_log, test_numbers, wait_for_log};
use super::proxy::LossyProxy;
use super::{PATIENCE, Rig};
use stasis_client::sidecar::RESYNC_EVENT;

fn emit_numbers(rig: &Rig, numbers: std::ops::Range<u64>) {
    for n in numbers {
        rig.kilo
            .emit("test.n", json!({"sessionID": "ses_a", "n": n}));
    }
}

/// The log holds at least `n` `test.n` events.
fn numbers_at_least(n: u64) -> impl Fn(&[Value]) -> bool {
    move |log: &[Value]| test_numbers(log).len() as u64 >= n
}

#[test]
fn each_event_is_stored_once_in_order_without_twins_keepalives_or_repeats() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&[]);
    for n in 0..300 {
        let properties = json!({"sessionID": "ses_a", "n": n});
        let id = rig.kilo.emit("test.n", properties.clone());
        if n % 50 == 0 {
            rig.kilo.heartbeat();
            rig.kilo.emit_with_id(&id, "test.n", &properties);
        }
    }
    rig.kilo
        .emit("test.session", json!({"sessionID": "bad/id", "k": 1}));
    rig.kilo.emit("test.session", json!({"k": 2}));
    let big = "x".repeat(3 * 1024 * 1024);
    rig.kilo.emit(
        "test.big",
        json!({"sessionID": "ses_a", "part": {"text": big}}),
    );
    emit_numbers(&rig, 300..301);

    let log = wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(301));
    assert_eq!(test_numbers(&log), (0..301).collect::<Vec<_>>());
    for kind in ["sync", "server.heartbeat", "server.connected"] {
        assert!(of_type(&log, kind).is_empty(), "{kind} is not forwarded");
    }
    assert_eq!(log[0]["type"], RESYNC_EVENT);
    assert_eq!(log[0]["data"]["reason"], "start");
    assert!(
        of_type(&log, "test.n")
            .iter()
            .all(|e| e["session_id"] == "ses_a")
    );
    let odd = of_type(&log, "test.session");
    assert_eq!(odd.len(), 2);
    assert!(odd.iter().all(|e| e["session_id"].is_null()), "{odd:?}");
    assert_eq!(
        odd[0]["data"],
        json!({"sessionID": "bad/id", "k": 1}),
        "data is verbatim"
    );

    let big = of_type(&log, "test.big");
    let text = big[0]["data"]["part"]["text"].as_str().expect("the text");
    assert!(
        text.len() < 1024 * 1024 && text.len() > 1_000_000,
        "{}",
        text.len()
    );
    assert!(text.starts_with("xxxx"));
    assert!(
        text.ends_with(&format!("of {} bytes]", 3 * 1024 * 1024)),
        "{}",
        &text[text.len() - 80..]
    );

    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    let log = read_log(&rig.stasis.base);
    assert_eq!(exit.summary["events_forwarded"], log.len());
    assert_eq!(exit.summary["duplicates"], 0);
    assert_eq!(exit.summary["shrunk"], 1);
    assert_eq!(exit.summary["dropped"], 0);
}

#[test]
fn stasis_killed_and_restarted_mid_stream_loses_nothing_and_stores_nothing_twice() {
    let mut rig = Rig::new();
    let sidecar = rig.sidecar(&[]);
    let kilo = rig.kilo.clone();
    let total = 3_000;
    let emitter = std::thread::spawn(move || {
        for n in 0..total {
            kilo.emit("test.n", json!({"sessionID": "ses_a", "n": n}));
            if n % 10 == 0 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    });
    wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(300));
    rig.stasis.kill_hard();
    std::thread::sleep(Duration::from_secs(1));
    rig.stasis.restart();
    emitter.join().expect("the emitter");

    let log = wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(total));
    assert_eq!(test_numbers(&log), (0..total).collect::<Vec<_>>());
    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("stasis unreachable"),
        "{}",
        exit.stderr
    );
    assert_eq!(
        test_numbers(&read_log(&rig.stasis.base)).len() as u64,
        total
    );
}

#[test]
fn a_sidecar_killed_with_its_batch_unacknowledged_resends_that_stamp_and_reuses_none() {
    let rig = Rig::new();
    let proxy = LossyProxy::start(rig.stasis.port);
    let setup = || {
        let mut setup = rig.setup().with(&["--linger", "300ms"]);
        setup.stasis_url = &proxy.base;
        setup
    };
    let first = SidecarProcess::spawn(&setup());
    rig.kilo.wait_connections(1, PATIENCE);
    emit_numbers(&rig, 0..10);
    wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(10));

    // stasis stores the next batch, but its answer never comes back.
    proxy.swallow_answers(true);
    emit_numbers(&rig, 10..15);
    wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(15));
    let state_file = rig.state_dir.join("producer.json");
    let before: Value =
        serde_json::from_slice(&std::fs::read(&state_file).expect("state")).expect("JSON");
    let in_flight = before["in_flight"]["seq"]
        .as_u64()
        .expect("a batch in flight");
    assert_eq!(
        before["in_flight"]["events"].as_array().map(Vec::len),
        Some(5)
    );
    first.signal("KILL");
    first.wait_exit(PATIENCE);
    proxy.swallow_answers(false);

    let second = SidecarProcess::spawn(&setup());
    rig.kilo.wait_connections(2, PATIENCE);
    second.wait_for_line("re-sending the batch in flight", PATIENCE);
    emit_numbers(&rig, 15..20);
    let log = wait_for_log(&rig.stasis.base, PATIENCE, numbers_at_least(20));
    assert_eq!(test_numbers(&log), (0..20).collect::<Vec<_>>());
    let restarts: Vec<_> = of_type(&log, RESYNC_EVENT)
        .into_iter()
        .filter(|e| e["data"]["reason"] == "restart")
        .collect();
    assert_eq!(restarts.len(), 1, "the restart is noted once");

    second.signal("TERM");
    let exit = second.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert_eq!(
        exit.summary["duplicates"], 1,
        "the re-sent stamp was recognised"
    );
    let after: Value =
        serde_json::from_slice(&std::fs::read(&state_file).expect("state")).expect("JSON");
    assert_eq!(after["producer_id"], before["producer_id"]);
    assert!(after["next_seq"].as_u64() > Some(in_flight + 1), "{after}");
}
