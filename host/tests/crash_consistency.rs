//! Guards against losing acknowledged writes when the host dies.
//!
//! Writers append concurrently (so several appends share one group commit)
//! while the host is killed with SIGKILL at an arbitrary moment. After a
//! restart on the same data folder, every append that was acknowledged must
//! be there with the seqs it was given and the data it carried, and the log
//! must still be gapless: an unacknowledged append may or may not have
//! landed, but never partly.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use serde_json::{Value, json};
use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};
use support::{Server, admin, agent};

const AGENT_PATH: &str = "/api/towns/crash/rigs/r/agents/a/events";

#[test]
fn acknowledged_appends_survive_kill_dash_nine_with_fsync() {
    kill_while_appending("fsync");
}

/// `os` durability skips fsync but still hands every commit to the kernel
/// before answering, so a killed process loses nothing either.
#[test]
fn acknowledged_appends_survive_kill_dash_nine_with_os_durability() {
    kill_while_appending("os");
}

fn kill_while_appending(durability: &str) {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &["--durability", durability]);
    let url = format!("{}{AGENT_PATH}", server.base);
    let acknowledged: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));

    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let (url, acknowledged, stop) =
                (url.clone(), Arc::clone(&acknowledged), Arc::clone(&stop));
            std::thread::spawn(move || {
                let client = agent();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 100_000 {
                    n += 1;
                    let tags: Vec<String> = (0..3).map(|i| format!("w{writer}-{n}-{i}")).collect();
                    let events: Vec<Value> = tags
                        .iter()
                        .map(|t| json!({"type": "t", "data": {"tag": t}}))
                        .collect();
                    let Ok(mut response) = client
                        .post(&url)
                        .header("authorization", admin())
                        .send_json(json!({ "events": events }))
                    else {
                        return; // the server is gone
                    };
                    if response.status() != 200 {
                        continue;
                    }
                    let body: Value = response.body_mut().read_json().expect("json");
                    let first = body["first_seq"].as_u64().expect("first_seq");
                    let mut acked = acknowledged.lock().expect("lock");
                    for (offset, tag) in tags.into_iter().enumerate() {
                        acked.push((first + offset as u64, tag));
                    }
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(1500));
    server.kill_hard();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().expect("writer thread");
    }
    let acknowledged = acknowledged.lock().expect("lock").clone();
    assert!(
        acknowledged.len() > 30,
        "too few appends were acknowledged to prove anything"
    );

    let restarted = Server::start(data.path(), &[]);
    let mut stored = std::collections::HashMap::new();
    let mut after = 0;
    let mut expected_seq = 1;
    loop {
        let mut response = agent()
            .get(format!(
                "{}{AGENT_PATH}?after={after}&limit=10000",
                restarted.base
            ))
            .header("authorization", admin())
            .call()
            .expect("read");
        let page: Value = response.body_mut().read_json().expect("json");
        for event in page["events"].as_array().expect("events") {
            let seq = event["seq"].as_u64().expect("seq");
            assert_eq!(seq, expected_seq, "the log has a gap or a partial batch");
            expected_seq += 1;
            stored.insert(seq, event["data"]["tag"].as_str().expect("tag").to_owned());
        }
        after = page["next_after"].as_u64().expect("next_after");
        if !page["has_more"].as_bool().expect("has_more") {
            break;
        }
    }
    assert_eq!((expected_seq - 1) % 3, 0, "a batch landed partly");
    for (seq, tag) in &acknowledged {
        assert_eq!(
            stored.get(seq),
            Some(tag),
            "acknowledged event {seq} was lost or changed"
        );
    }
    eprintln!(
        "{durability}: {} acknowledged events all survived; {} events stored in total",
        acknowledged.len(),
        stored.len()
    );
}
