//! Retention: an agent keeps its newest 10,000 events; the oldest go first.
//! A cursor older than what is kept (`after < first_seq - 1`) is 410
//! `cursor_expired` with `first_seq`; sessions lose the dropped events.

use stasis_conformance::{AgentLog, Value, assert_error, json, limits, num, seqs};

/// Appends `total` events in batches of 1,000, all in session `s1`.
fn fill(log: &AgentLog, total: u64) {
    let mut seq = 0;
    while seq < total {
        let n = (total - seq).min(limits::BATCH_EVENTS);
        let events: Vec<Value> = (seq..seq + n)
            .map(|i| json!({"type": "fill", "session_id": "s1", "data": i + 1}))
            .collect();
        let reply = log.append(Value::Array(events));
        assert_eq!(num(&reply, "last_seq"), seq + n);
        seq += n;
    }
}

#[test]
fn the_oldest_events_go_first_and_old_cursors_expire() {
    let log = AgentLog::fresh("retention");
    let total = limits::RETENTION + 50;
    fill(&log, total);

    let head = log.read("after=50&limit=3");
    assert_eq!(head["first_seq"], json!(51));
    assert_eq!(head["last_seq"], json!(total));
    assert_eq!(seqs(&head), vec![51, 52, 53]);
    assert_eq!(
        head["events"][0]["data"],
        json!(51),
        "the event at 51 is the one appended 51st"
    );

    for after in [0, 1, 49] {
        let reply = log.read_reply(&format!("after={after}"));
        let error = assert_error(&reply, 410, "cursor_expired");
        assert_eq!(
            error.get("first_seq"),
            Some(&json!(51)),
            "first_seq in {error:?}"
        );
    }

    let kept = log.read_all(50, "");
    assert_eq!(kept.len() as u64, limits::RETENTION);
    assert_eq!(num(&kept[0], "seq"), 51);
    assert_eq!(num(&kept[kept.len() - 1], "seq"), total);

    let sessions = log.sessions();
    let session = &sessions["sessions"][0];
    assert_eq!(session["session_id"], json!("s1"));
    assert_eq!(session["event_count"], json!(limits::RETENTION));
    assert_eq!(session["first_seq"], json!(51));
    assert_eq!(session["last_seq"], json!(total));
}

#[test]
fn a_full_log_keeps_counting_seqs() {
    let log = AgentLog::fresh("retention-seq");
    fill(&log, limits::RETENTION);
    assert_eq!(log.read("after=0&limit=1")["first_seq"], json!(1));
    let reply = log.append(json!([{"type": "one-more"}]));
    assert_eq!(reply["first_seq"], json!(limits::RETENTION + 1));
    let page = log.read("after=1&limit=1");
    assert_eq!(page["first_seq"], json!(2));
    assert_eq!(seqs(&page), vec![2]);
    let expired = log.read_reply("after=0");
    let error = assert_error(&expired, 410, "cursor_expired");
    assert_eq!(error.get("first_seq"), Some(&json!(2)));
}
