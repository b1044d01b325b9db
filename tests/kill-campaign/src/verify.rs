//! The checks after a restart on the killed host's data folder.
//!
//! Events: every acknowledged batch is there with its seqs and data; the
//! log has no gap; a batch is whole or absent, and present once however
//! often it was sent; the stamps survived (a retry of an acknowledged batch
//! appends nothing, a retry of one in flight at the kill lands exactly
//! once). Snapshot: the current one is one of the bodies sent, whole and
//! matching its sha256, at a version no older than the newest
//! acknowledged; after one more push (whose sweep removes what the crash
//! left) the agent's KV folder holds only the current version's file.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use fastrand::Rng;
use serde_json::Value;

use crate::client::Client;
use crate::host::{files_in, temp_files_in};
use crate::load::{Appends, Batch, Pushes, append, sha256_hex, snapshot_body};

/// What the checks covered, and what they found wrong.
#[derive(Debug, Default)]
pub struct Checked {
    /// Acknowledged events found with their seq and data.
    pub events: u64,
    /// Retries after the restart (of acknowledged and in-flight batches).
    pub retries: u64,
    /// Snapshots read back whole.
    pub snapshots: u64,
    /// Everything lost, changed, duplicated or left behind.
    pub losses: Vec<String>,
}

/// Retries what was in flight and one acknowledged batch per producer,
/// then checks every agent's log.
pub fn appends(client: &Client, paths: &[String], appends: &Appends, checked: &mut Checked) {
    let mut expected: Vec<Batch> = appends.acked.clone();
    for batch in &appends.in_flight {
        match append(client, batch) {
            Ok(Ok((first, last, _))) => {
                checked.retries += 1;
                let mut landed = batch.clone();
                landed.acked = Some((first, last));
                expected.push(landed);
            }
            other => checked.losses.push(format!(
                "retrying an in-flight batch after the restart: {other:?}"
            )),
        }
    }
    let mut retried = HashSet::new();
    for batch in appends.acked.iter().rev() {
        if retried.insert(batch.producer.clone()) {
            match append(client, batch) {
                Ok(Ok((first, last, true))) if Some((first, last)) == batch.acked => checked.retries += 1,
                other => checked.losses.push(format!(
                    "after the restart, a retry of {} #{} (acknowledged as {:?}) answered {other:?}",
                    batch.producer, batch.seq, batch.acked
                )),
            }
        }
    }
    for path in paths {
        let wanted: Vec<&Batch> = expected.iter().filter(|b| &b.path == path).collect();
        log(client, path, &wanted, checked);
    }
}

/// Checks one agent's log against the batches that must be in it.
fn log(client: &Client, path: &str, wanted: &[&Batch], checked: &mut Checked) {
    let events = match read_all(client, path) {
        Ok(events) => events,
        Err(problem) => return checked.losses.push(problem),
    };
    let mut by_seq = HashMap::new();
    for (at, event) in events.iter().enumerate() {
        let seq = event["seq"].as_u64().unwrap_or(0);
        if seq != at as u64 + 1 {
            checked
                .losses
                .push(format!("{path}: seq {seq} at position {}: a gap", at + 1));
            return;
        }
        by_seq.insert(seq, &event["data"]);
    }
    for batch in wanted {
        let Some((first, _)) = batch.acked else {
            continue;
        };
        for (offset, data) in batch.data.iter().enumerate() {
            let seq = first + offset as u64;
            if by_seq.get(&seq) == Some(&data) {
                checked.events += 1;
            } else {
                checked.losses.push(format!(
                    "{path}: acknowledged event {seq} ({} #{}) was lost or changed",
                    batch.producer, batch.seq
                ));
            }
        }
    }
    whole_and_once(path, &events, checked);
}

/// Each stored batch is whole, in order, and stored once.
fn whole_and_once(path: &str, events: &[Value], checked: &mut Checked) {
    let mut seen = HashSet::new();
    let mut at = 0;
    while let Some(event) = events.get(at) {
        let data = &event["data"];
        let stamp = (data["w"].to_string(), data["n"].as_u64());
        if !seen.insert(stamp.clone()) {
            checked.losses.push(format!(
                "{path}: batch {stamp:?} stored twice (seq {})",
                event["seq"]
            ));
        }
        let mut i = 0;
        while let Some(next) = events.get(at) {
            let next = &next["data"];
            if (next["w"].to_string(), next["n"].as_u64()) != stamp {
                break;
            }
            if next["i"].as_u64() != Some(i) {
                checked.losses.push(format!(
                    "{path}: batch {stamp:?} is out of order at seq {}",
                    events[at]["seq"]
                ));
            }
            i += 1;
            at += 1;
        }
    }
}

fn read_all(client: &Client, path: &str) -> Result<Vec<Value>, String> {
    let mut all = Vec::new();
    let mut after = 0;
    for _ in 0..10_000 {
        let (status, page) = client.get(&format!("{path}?after={after}&limit=10000"))?;
        if status != 200 {
            return Err(format!("GET {path} answered {status} {page}"));
        }
        all.extend(page["events"].as_array().cloned().unwrap_or_default());
        if page["has_more"] != Value::Bool(true) {
            return Ok(all);
        }
        after = page["next_after"].as_u64().unwrap_or(after + 1);
    }
    Err(format!("GET {path}: paging never ended"))
}

/// Checks the current snapshot, then pushes one more and checks that the
/// agent's KV folder (`kv_root/key`) holds only its file, and the KV
/// bucket no temporary file.
pub fn snapshot(
    client: &Client,
    path: &str,
    kv: (&Path, &str),
    pushes: &Pushes,
    rng: &mut Rng,
    checked: &mut Checked,
) {
    match client.get_snapshot(path) {
        Ok(served) if served.status == 200 => {
            let announced = served.sha256.clone().unwrap_or_default();
            let version = served.version.unwrap_or(0);
            if sha256_hex(&served.bytes) != announced || !pushes.sent.contains(&announced) {
                checked.losses.push(format!(
                    "{path}: served {} bytes that are not a body sent whole ({announced})",
                    served.bytes.len()
                ));
            } else if version < pushes.newest {
                checked.losses.push(format!(
                    "{path}: version {version} served, {} was acknowledged",
                    pushes.newest
                ));
            } else {
                checked.snapshots += 1;
            }
        }
        Ok(served) if served.status == 404 && pushes.acked == 0 => {}
        other => checked
            .losses
            .push(format!("GET {path} after the restart: {other:?}")),
    }
    sweep(client, path, kv, rng, checked);
}

fn sweep(
    client: &Client,
    path: &str,
    (kv_root, key): (&Path, &str),
    rng: &mut Rng,
    checked: &mut Checked,
) {
    let kv_dir = kv_root.join(key);
    let mut bytes = snapshot_body(rng);
    bytes.resize(bytes.len().max(1_100_000), 7);
    let sha = sha256_hex(&bytes);
    // Past the pending time of chunks the killed pushes uploaded.
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    match client.put_snapshot(path, &bytes, &sha) {
        Ok((201, _)) => {}
        other => {
            return checked
                .losses
                .push(format!("PUT {path} after the restart: {other:?}"));
        }
    }
    let named = match client.get(&format!("{path}/manifest")) {
        Ok((200, manifest)) => {
            let mut named: Vec<String> = manifest["chunks"]
                .as_array()
                .map(|list| {
                    list.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            named.sort();
            named.dedup();
            named
        }
        other => {
            return checked
                .losses
                .push(format!("GET {path}/manifest after the sweep: {other:?}"));
        }
    };
    // The host collects and sweeps just after its answer: the folder
    // settles within a bounded wait.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (files, chunks, temp) = loop {
        let files = files_in(&kv_dir);
        let mut chunks = files_in(&kv_dir.join("chunks"));
        chunks.sort();
        // The host writes a value in its temporary folder first, then renames it.
        let temp = temp_files_in(kv_root);
        let settled = files.is_empty() && chunks == named && temp.is_empty();
        if settled || std::time::Instant::now() >= deadline {
            break (files, chunks, temp);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    if !files.is_empty() || chunks != named || !temp.is_empty() {
        checked.losses.push(format!(
            "{}: after a sweep the KV folder holds single keys {files:?} (want none) and chunks {chunks:?} (want exactly \
             the manifest's {named:?}) and temp files {temp:?}",
            kv_dir.display()
        ));
    }
}
