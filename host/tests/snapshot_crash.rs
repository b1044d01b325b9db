//! A host killed in the middle of snapshot uploads (whole-file PUTs and
//! chunked pushes over the delta protocol) loses nothing it acknowledged
//! and never serves a mix: after a restart, the snapshot is one of the
//! bodies that was sent, whole and matching its sha256, and once a sweep
//! ran (past the pending time) the KV folder holds exactly the chunks the
//! current manifest names.

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
use support::{Server, admin, agent, eventually};

const SNAPSHOT_PATH: &str = "/api/towns/crash/rigs/r/agents/mayor/db-snapshot";
/// Uploaded chunks no manifest names are kept this long: short, so that
/// the sweep after the restart may collect what the killed pushes left.
const PENDING_TTL: &str = "1s";
/// The chunk size of the delta pushes.
const CHUNK: usize = 32 * 1024;

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
    let server = Server::start(data.path(), &["--snapshot-pending-ttl", PENDING_TTL]);
    let url = format!("{}{SNAPSHOT_PATH}", server.base);
    // Every body sent (acknowledged or not), by sha256; and the newest
    // acknowledged version.
    let sent: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
    let newest_acknowledged = Arc::new(Mutex::new(0_u64));
    let stop = Arc::new(AtomicBool::new(false));

    let writers: Vec<_> = (0..4)
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
                    // Writer 3 pushes chunks; the others PUT the whole file.
                    let pushed = if writer == 3 {
                        delta_push(&client, &url, &bytes)
                    } else {
                        whole_put(&client, &url, &bytes)
                    };
                    let Some(receipt) = pushed else {
                        return; // the server is gone
                    };
                    if let Some(receipt) = receipt {
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

    let server = Server::start(data.path(), &["--snapshot-pending-ttl", PENDING_TTL]);
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

    // Past the pending time, one more upload sweeps what the crash left.
    std::thread::sleep(Duration::from_millis(1_500));
    let last = body(7, 7);
    let receipt = whole_put(&client, &url, &last).expect("the server answers");
    assert!(receipt.is_some(), "the PUT after the restart is stored");
    let agent_dir = data.path().join("kv/snapshots/crash/r/mayor");
    let mut named = manifest_chunks(&client, &url);
    named.sort();
    named.dedup();
    eventually("the KV folder holds exactly the current chunks", || {
        let mut stored = kv_files(&agent_dir.join("chunks"));
        stored.sort();
        let keys = kv_files(&agent_dir);
        (keys == ["chunks"] && stored == named)
            .then_some(())
            .ok_or_else(|| format!("keys {keys:?}, chunks {stored:?}, named {named:?}"))
    });
    drop(server);
}

/// A whole-file PUT: `None` when the server is gone, `Some(None)` when it
/// refused, `Some(Some(receipt))` when it stored the body.
fn whole_put(client: &ureq::Agent, url: &str, bytes: &[u8]) -> Option<Option<serde_json::Value>> {
    let mut response = client
        .put(url)
        .header("Authorization", admin())
        .header("Content-Type", "application/octet-stream")
        .header("X-Stasis-Sha256", hex_sha256(bytes))
        .send(bytes)
        .ok()?;
    if response.status() != 201 {
        return Some(None);
    }
    Some(response.body_mut().read_json().ok())
}

/// A push over the delta protocol: which chunks are missing, their upload,
/// then the manifest's commit. Answers as [`whole_put`].
fn delta_push(client: &ureq::Agent, url: &str, bytes: &[u8]) -> Option<Option<serde_json::Value>> {
    let chunks: Vec<&[u8]> = bytes.chunks(CHUNK).collect();
    let names: Vec<String> = chunks.iter().map(|c| hex_sha256(c)).collect();
    let mut asked = client
        .post(&format!("{url}/missing"))
        .header("Authorization", admin())
        .send_json(serde_json::json!({ "chunks": names }))
        .ok()?;
    let missing: serde_json::Value = asked.body_mut().read_json().ok()?;
    let missing: Vec<&str> = missing["missing"]
        .as_array()
        .map(|list| list.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    for (name, chunk) in names.iter().zip(&chunks) {
        if !missing.contains(&name.as_str()) {
            continue;
        }
        let status = client
            .put(&format!("{url}/chunks/{name}"))
            .header("Authorization", admin())
            .header("Content-Type", "application/octet-stream")
            .send(*chunk)
            .ok()?
            .status();
        if !status.is_success() {
            return Some(None);
        }
    }
    let manifest = serde_json::json!({
        "size": bytes.len(),
        "sha256": hex_sha256(bytes),
        "chunk_size": CHUNK,
        "chunks": names,
    });
    let mut committed = client
        .put(&format!("{url}/manifest"))
        .header("Authorization", admin())
        .send_json(manifest)
        .ok()?;
    if committed.status() != 201 {
        return Some(None);
    }
    Some(committed.body_mut().read_json().ok())
}

/// The chunks the current manifest names.
fn manifest_chunks(client: &ureq::Agent, url: &str) -> Vec<String> {
    let mut response = client
        .get(&format!("{url}/manifest"))
        .header("Authorization", admin())
        .call()
        .expect("GET manifest");
    assert_eq!(response.status(), 200);
    let manifest: serde_json::Value = response.body_mut().read_json().expect("a manifest");
    manifest["chunks"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
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
fn deleting_a_kv_snapshot_removes_its_chunks() {
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
    let mut named = manifest_chunks(&client, &url);
    named.sort();
    named.dedup();
    eventually("the first version's chunks collected", || {
        let mut stored = kv_files(&folder.join("chunks"));
        stored.sort();
        (stored == named)
            .then_some(())
            .ok_or_else(|| format!("stored {stored:?}, named {named:?}"))
    });
    let status = client
        .delete(&url)
        .header("Authorization", admin())
        .call()
        .expect("DELETE")
        .status();
    assert_eq!(status, 204);
    // The host collects just after its answer, on a task of its own.
    eventually("the chunks went with the snapshot", || {
        let stored = kv_files(&folder.join("chunks"));
        stored
            .is_empty()
            .then_some(())
            .ok_or_else(|| format!("still stored: {stored:?}"))
    });
}
