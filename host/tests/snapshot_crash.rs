//! A host killed in the middle of snapshot uploads loses nothing it
//! acknowledged and never serves a mix: after a restart, the snapshot is
//! one of the bodies that was sent, whole and matching its sha256, and the
//! KV folder holds no key the metadata does not name once a sweep ran.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use sha2::{Digest, Sha256};
use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};
use support::{Server, admin, agent};

const SNAPSHOT_PATH: &str = "/api/towns/crash/rigs/r/agents/mayor/db-snapshot";

/// Bodies on both sides of the inline limit, each distinct.
fn body(round: usize, writer: usize) -> Vec<u8> {
    let len = match (round + writer) % 3 {
        0 => 200_000,
        1 => 1_500_000,
        _ => 6_000_000,
    };
    let seed = (round * 31 + writer * 7) as u8;
    (0..len)
        .map(|i| (i as u8).wrapping_mul(151).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect()
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn every_read_after_kill_dash_nine_is_a_whole_snapshot() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &[]);
    let url = format!("{}{SNAPSHOT_PATH}", server.base);
    // Every body sent (acknowledged or not), by sha256; and the newest
    // acknowledged version.
    let sent: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
    let newest_acknowledged = Arc::new(Mutex::new(0_u64));
    let stop = Arc::new(AtomicBool::new(false));

    let writers: Vec<_> = (0..3)
        .map(|writer| {
            let (url, sent, newest, stop) = (
                url.clone(),
                Arc::clone(&sent),
                Arc::clone(&newest_acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let client = agent();
                for round in 0..10_000 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let bytes = body(round, writer);
                    let sha = hex_sha256(&bytes);
                    sent.lock()
                        .expect("lock")
                        .insert(sha.clone(), bytes.clone());
                    let Ok(mut response) = client
                        .put(&url)
                        .header("Authorization", admin())
                        .header("Content-Type", "application/octet-stream")
                        .header("X-Stasis-Sha256", &sha)
                        .send(&bytes[..])
                    else {
                        return; // the server is gone
                    };
                    if response.status() == 201 {
                        let receipt: serde_json::Value =
                            response.body_mut().read_json().expect("a JSON receipt");
                        assert_eq!(receipt["sha256"], sha.as_str());
                        let version = receipt["version"].as_u64().expect("a version");
                        let mut newest = newest.lock().expect("lock");
                        *newest = (*newest).max(version);
                    }
                }
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(1_500));
    server.kill_hard();
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.join().expect("writer thread");
    }
    let newest_acknowledged = *newest_acknowledged.lock().expect("lock");
    assert!(
        newest_acknowledged > 0,
        "some uploads finished before the kill"
    );

    let server = Server::start(data.path(), &[]);
    let url = format!("{}{SNAPSHOT_PATH}", server.base);
    let client = agent();
    let mut response = client
        .get(&url)
        .header("Authorization", admin())
        .call()
        .expect("GET after restart");
    assert_eq!(response.status(), 200);
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .expect("snapshot header")
    };
    let announced = header("x-stasis-sha256");
    let version: u64 = header("x-stasis-snapshot-version")
        .parse()
        .expect("a version");
    let bytes = response
        .body_mut()
        .with_config()
        .limit(30 * 1024 * 1024)
        .read_to_vec()
        .expect("the body");
    assert_eq!(hex_sha256(&bytes), announced, "bytes match their sha256");
    let sent = sent.lock().expect("lock");
    assert_eq!(
        sent.get(&announced),
        Some(&bytes),
        "the snapshot is one of the bodies sent, whole"
    );
    assert!(
        version >= newest_acknowledged,
        "an acknowledged snapshot (version {newest_acknowledged}) was lost: found {version}"
    );

    // One more upload sweeps what the crash left in the KV folder.
    let last = body(7, 7);
    let status = client
        .put(&url)
        .header("Authorization", admin())
        .header("Content-Type", "application/octet-stream")
        .send(&last[..])
        .expect("PUT after restart")
        .status();
    assert_eq!(status, 201);
    let keys = kv_files(&data.path().join("kv/snapshots/crash/r/mayor"));
    assert!(
        keys.len() <= 1,
        "only the current version's key may remain, found {keys:?}"
    );
    drop(server);
}

fn kv_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn deleting_a_kv_snapshot_removes_its_key() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &[]);
    let url = format!("{}{SNAPSHOT_PATH}", server.base);
    let client = agent();
    let folder = data.path().join("kv/snapshots/crash/r/mayor");
    for round in 0..2 {
        let status = client
            .put(&url)
            .header("Authorization", admin())
            .header("Content-Type", "application/octet-stream")
            .send(&body(round * 3 + 2, 0)[..])
            .expect("PUT")
            .status();
        assert_eq!(status, 201);
    }
    assert_eq!(
        kv_files(&folder),
        vec!["v2".to_owned()],
        "v1 was superseded"
    );
    let status = client
        .delete(&url)
        .header("Authorization", admin())
        .call()
        .expect("DELETE")
        .status();
    assert_eq!(status, 204);
    assert!(
        kv_files(&folder).is_empty(),
        "the KV key went with the snapshot"
    );
}
