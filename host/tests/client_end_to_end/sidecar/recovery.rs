//! Where events went missing, the conversation is read back from the runtime: after its stream
//! was lost (it does not replay), and after the buffer filled while stasis was away.

use std::time::Duration;

use serde_json::{Value, json};

use super::harness::{get, of_type, test_numbers, wait_for_log};
use super::{PATIENCE, Rig};
use stasis_client::sidecar::{GAP_EVENT, RESYNC_EVENT};

/// The rebuilt conversation's turns as (role, content).
fn turns(rig: &Rig) -> Vec<(String, String)> {
    let (status, conversation) = get(&rig.stasis.base, &Rig::agent_path("/conversation"));
    assert_eq!(status, 200, "{conversation}");
    conversation["turns"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let text = |field: &str| t[field].as_str().unwrap_or_default().to_owned();
            (text("role"), text("content"))
        })
        .collect()
}

fn turn_pairs(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(r, c)| ((*r).to_owned(), (*c).to_owned()))
        .collect()
}

fn resyncs<'l>(log: &'l [Value], reason: &str) -> Vec<&'l Value> {
    of_type(log, RESYNC_EVENT)
        .into_iter()
        .filter(|e| e["data"]["reason"] == reason)
        .collect()
}

#[test]
fn a_lost_stream_is_reopened_and_what_it_missed_is_read_back_from_the_runtime() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&[]);
    rig.kilo.turn("ses_a", "first question", "first answer");
    wait_for_log(&rig.stasis.base, PATIENCE, |log| {
        !of_type(log, "session.idle").is_empty()
    });

    // The runtime restarts: the stream drops, a turn runs while nobody listens (kilo does not
    // replay it), and connections are refused for a while.
    rig.kilo.refuse(true);
    rig.kilo.drop_streams();
    rig.kilo.turn(
        "ses_a",
        "asked while the stream was down",
        "answered to nobody",
    );
    std::thread::sleep(Duration::from_millis(500));
    rig.kilo.refuse(false);
    rig.kilo.wait_connections(2, PATIENCE);
    rig.kilo
        .emit("test.n", json!({"sessionID": "ses_a", "n": 1}));

    let log = wait_for_log(&rig.stasis.base, PATIENCE, |log| test_numbers(log) == [1]);
    let reconnects = resyncs(&log, "reconnect");
    assert_eq!(reconnects.len(), 1, "{reconnects:?}");
    assert!(
        reconnects[0]["data"]["messages"].as_u64() >= Some(2),
        "{}",
        reconnects[0]
    );
    assert_eq!(
        turns(&rig),
        turn_pairs(&[
            ("user", "first question"),
            ("assistant", "first answer"),
            ("user", "asked while the stream was down"),
            ("assistant", "answered to nobody"),
        ])
    );
    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert_eq!(exit.summary["reconnects"], 1);
    assert!(
        exit.stderr.contains("lost the runtime's event stream"),
        "{}",
        exit.stderr
    );
}

#[test]
fn a_silent_stream_counts_as_dead_and_is_reopened() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&["--idle-timeout", "1s"]);
    rig.kilo.wait_connections(2, PATIENCE);
    sidecar.wait_for_line("silent for 1s", PATIENCE);
    sidecar.signal("TERM");
    assert_eq!(sidecar.wait_exit(PATIENCE).code, Some(0));
}

#[test]
fn a_full_buffer_drops_then_records_the_gap_and_reads_the_conversation_back() {
    let mut rig = Rig::new();
    let sidecar = rig.sidecar(&["--buffer-events", "20"]);
    wait_for_log(&rig.stasis.base, PATIENCE, |log| {
        !resyncs(log, "start").is_empty()
    });
    rig.stasis.kill_hard();

    // One event goes first, so that the batch in flight (retried until stasis is back) holds
    // it alone; then the buffer fills with the next 20, and the rest is dropped.
    rig.kilo
        .emit("test.n", json!({"sessionID": "ses_a", "n": 0}));
    sidecar.wait_for_line("stasis unreachable", PATIENCE);
    let mut emitted: u64 = 1;
    for n in 1..60 {
        rig.kilo
            .emit("test.n", json!({"sessionID": "ses_a", "n": n}));
        emitted += 1;
    }
    emitted += rig.kilo.turn(
        "ses_a",
        "asked during the outage",
        "answered during the outage",
    ) as u64;
    sidecar.wait_for_line("the buffer is full", PATIENCE);
    rig.stasis.restart();

    let log = wait_for_log(&rig.stasis.base, PATIENCE, |log| {
        !resyncs(log, "buffer_full").is_empty()
    });
    let forwarded = test_numbers(&log);
    assert_eq!(
        forwarded,
        (0..21).collect::<Vec<_>>(),
        "the batch in flight, then the 20 the buffer held"
    );
    let gaps = of_type(&log, GAP_EVENT);
    assert_eq!(gaps.len(), 1);
    let gap = &gaps[0]["data"];
    assert_eq!(
        gap["dropped_events"].as_u64(),
        Some(emitted - forwarded.len() as u64)
    );
    assert!(gap["from_ms"].as_u64() <= gap["to_ms"].as_u64(), "{gap}");
    let position = |kind: &str| log.iter().position(|e| e["type"] == kind);
    let last_number = log.iter().rposition(|e| e["type"] == "test.n");
    assert!(
        last_number < position(GAP_EVENT),
        "the gap comes where events went missing"
    );
    assert_eq!(
        log.get(position(GAP_EVENT).map_or(0, |p| p + 1))
            .map(|e| &e["data"]["reason"]),
        Some(&json!("buffer_full")),
        "its resync follows it"
    );
    assert_eq!(
        turns(&rig),
        turn_pairs(&[
            ("user", "asked during the outage"),
            ("assistant", "answered during the outage"),
        ])
    );

    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    assert_eq!(exit.summary["dropped"], gap["dropped_events"]);
}
