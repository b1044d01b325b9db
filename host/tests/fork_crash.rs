//! A host killed with `kill -9` while its source agent's collection runs
//! (superseded versions dropped and collected after each push, the source
//! destroyed and written again) never loses a chunk a fork names: after a
//! restart the fork reads its kilo.db whole, every chunk it names is still
//! in its source's KV folder, and once the fork is deleted too those
//! chunks are collected.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};
use support::{Server, admin, agent, eventually, get_whole};

const SOURCE: &str = "/api/towns/crash/rigs/r/agents/source";
const FORK: &str = "/api/towns/crash/rigs/r2/agents/fork";
/// Superseded versions go at the next write, their chunks at once.
const FLAGS: &[&str] = &["--snapshot-grace", "0s", "--history-retention", "0"];

/// `len` pseudo-random bytes from `seed` (xorshift), so that no two
/// versions share a chunk.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn send(method: &str, url: &str, body: Option<serde_json::Value>) -> Option<u16> {
    let client = agent();
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(url)
        .header("Authorization", admin());
    let response = match body {
        Some(json) => client
            .run(
                request
                    .header("Content-Type", "application/json")
                    .body(json.to_string())
                    .expect("a request"),
            )
            .ok()?,
        None => client.run(request.body(()).expect("a request")).ok()?,
    };
    Some(response.status().as_u16())
}

fn put_db(base: &str, bytes: &[u8]) -> Option<u16> {
    agent()
        .put(&format!("{base}{SOURCE}/db-snapshot"))
        .header("Authorization", admin())
        .header("Content-Type", "application/octet-stream")
        .send(bytes)
        .ok()
        .map(|r| r.status().as_u16())
}

fn fork_chunks(server: &Server) -> Vec<String> {
    let manifest: serde_json::Value =
        serde_json::from_slice(&get_whole(server, &format!("{FORK}/db-snapshot/manifest")))
            .expect("a manifest");
    manifest["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c.as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn kill_dash_nine_during_collection_never_loses_a_chunk_a_fork_names() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), FLAGS);
    let base = server.base.clone();
    let register = serde_json::json!({"role": "polecat"});
    assert_eq!(
        send("PUT", &format!("{base}{SOURCE}"), Some(register)),
        Some(201)
    );
    let events = serde_json::json!({"events": [{"type": "turn"}]});
    assert_eq!(
        send("POST", &format!("{base}{SOURCE}/events"), Some(events)),
        Some(200)
    );
    let forked_db = noise(3_500_000, 1);
    assert_eq!(put_db(&base, &forked_db), Some(201));
    let body = serde_json::json!({"point": {"seq": 1}, "rig": "r2", "agent": "fork"});
    assert_eq!(
        send("POST", &format!("{base}{SOURCE}/fork"), Some(body)),
        Some(201)
    );
    let named = fork_chunks(&server);
    assert!(!named.is_empty(), "kilo.db is chunked");

    // The source churns: each push drops the version before it and its
    // chunks are collected; every fifth round the source is destroyed.
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let attempted = Arc::new(AtomicU64::new(0));
    let churn = {
        let (base, stop, rounds) = (base.clone(), Arc::clone(&stop), Arc::clone(&rounds));
        let attempted = Arc::clone(&attempted);
        std::thread::spawn(move || {
            for round in 2..10_000_u64 {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                attempted.store(round, Ordering::SeqCst);
                let done = if round % 5 == 0 {
                    send("DELETE", &format!("{base}{SOURCE}"), None)
                } else {
                    put_db(&base, &noise(2_500_000, round))
                };
                if done.is_none() {
                    return; // the server is gone
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // Killed once the source has churned a few rounds (each a collection
    // of the round before), in the middle of the next ones.
    for _ in 0..600 {
        if rounds.load(Ordering::Relaxed) >= 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(150));
    server.kill_hard();
    stop.store(true, Ordering::Relaxed);
    churn.join().expect("the churn thread");

    let server = Server::start(data.path(), FLAGS);
    let folder = data.path().join("kv/snapshots/crash/r/source/chunks");
    assert!(
        get_whole(&server, &format!("{FORK}/db-snapshot")) == forked_db,
        "the fork reads its kilo.db whole after the restart"
    );
    for name in &named {
        assert!(
            folder.join(name).exists(),
            "the source keeps {name} for its fork"
        );
    }
    // The source goes for good, then the fork: nothing names the chunks.
    // It is gone already only when the kill came during or just after one
    // of the churn's destroys (every fifth round), before a push wrote it
    // again.
    let last_round = attempted.load(Ordering::SeqCst);
    let gone_already = matches!(last_round % 5, 0 | 1);
    let destroyed = send("DELETE", &format!("{}{SOURCE}", server.base), None);
    assert!(
        destroyed == Some(204) || (gone_already && destroyed == Some(404)),
        "the source's destroy answered {destroyed:?} after round {last_round}"
    );
    assert!(get_whole(&server, &format!("{FORK}/db-snapshot")) == forked_db);
    assert_eq!(
        send("DELETE", &format!("{}{FORK}", server.base), None),
        Some(204)
    );
    eventually(
        "the chunks only the fork named are collected",
        || match named.iter().find(|name| folder.join(name).exists()) {
            Some(name) => Err(format!("{name} is still stored")),
            None => Ok(()),
        },
    );
    drop(server);
}
