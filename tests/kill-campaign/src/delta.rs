//! Snapshot pushes by chunks, as a container's sidecar makes them, and
//! readers of the whole snapshot beside them. The pushes alternate between
//! two files that differ from push to push in a few pages, so that each
//! push uploads again chunks the push before it superseded, while their
//! collection may be running: the race that once left an acknowledged
//! snapshot naming a deleted chunk.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use fastrand::Rng;
use serde_json::{Value, json};

use crate::client::{Client, sha256_hex};

/// A client's chunk size.
const CHUNK: usize = 32 * 1024;
/// An upload refused because its chunk is being collected is retried this
/// long at most: a collection step takes milliseconds.
const BLOCKED_LIMIT: Duration = Duration::from_secs(5);

/// Two files of 1.1 to 1.6 MB (above the inline limit); each push changes
/// a few 4 KiB pages of one.
pub struct Files {
    bodies: [Vec<u8>; 2],
    turn: usize,
}

impl Files {
    /// Two fresh files.
    pub fn new(rng: &mut Rng) -> Self {
        let mut file = || {
            let mut bytes = vec![0_u8; rng.usize(1_100_000..1_600_000)];
            rng.fill(&mut bytes);
            bytes
        };
        Self {
            bodies: [file(), file()],
            turn: 0,
        }
    }

    /// The next file: the other one than last time, a few pages changed.
    pub fn next(&mut self, rng: &mut Rng) -> Vec<u8> {
        self.turn ^= 1;
        let body = &mut self.bodies[self.turn];
        for _ in 0..rng.usize(1..4) {
            let page = rng.usize(..body.len() / 4096) * 4096;
            body[page] ^= 0xff;
        }
        body.clone()
    }
}

/// What one push by chunks saw: its answer, and how long an upload waited
/// for a collection at most.
pub struct Pushed {
    /// The commit's receipt, or what broke the contract.
    pub result: Result<Value, String>,
    /// The longest an upload was refused as being collected (ms).
    pub blocked_ms: u64,
}

/// Pushes `bytes` by chunks to the snapshot at `path`: the missing ones,
/// each upload, the manifest. `Err`: the host is gone.
pub fn push(client: &Client, path: &str, bytes: &[u8], sha256: &str) -> Result<Pushed, String> {
    let names: Vec<String> = bytes.chunks(CHUNK).map(sha256_hex).collect();
    let mut blocked_ms = 0;
    let (status, answer) = client.post(&format!("{path}/missing"), &json!({"chunks": names}))?;
    if status != 200 {
        return Ok(refused(format!("POST missing answered {status} {answer}")));
    }
    let mut to_send = listed(&answer["missing"]);
    for _ in 0..3 {
        for name in &to_send {
            let Some(index) = names.iter().position(|n| n == name) else {
                return Ok(refused(format!(
                    "missing named {name}, not a chunk of the file"
                )));
            };
            let chunk = &bytes[index * CHUNK..((index + 1) * CHUNK).min(bytes.len())];
            match upload(client, &format!("{path}/chunks/{name}"), chunk)? {
                Ok(waited) => blocked_ms = blocked_ms.max(waited),
                Err(problem) => return Ok(refused(problem)),
            }
        }
        let manifest = json!({
            "size": bytes.len(),
            "sha256": sha256,
            "chunk_size": CHUNK,
            "chunks": names,
        });
        let (status, answer) = client.put_json(&format!("{path}/manifest"), &manifest)?;
        match status {
            201 => {
                return Ok(Pushed {
                    result: Ok(answer),
                    blocked_ms,
                });
            }
            // Held when asked, collected since: upload those and commit again.
            409 if answer["error"]["code"] == "chunks_missing" => {
                to_send = listed(&answer["error"]["missing"]);
            }
            _ => return Ok(refused(format!("the manifest answered {status} {answer}"))),
        }
    }
    Ok(refused("the manifest missed chunks three times".to_owned()))
}

fn refused(problem: String) -> Pushed {
    Pushed {
        result: Err(problem),
        blocked_ms: 0,
    }
}

fn listed(names: &Value) -> Vec<String> {
    names
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

/// One chunk's upload, retried while its chunk is being collected: how long
/// it waited, or what broke the contract. `Err`: the host is gone.
fn upload(client: &Client, path: &str, chunk: &[u8]) -> Result<Result<u64, String>, String> {
    let started = Instant::now();
    loop {
        let (status, answer) = client.put_bytes(path, chunk)?;
        let waited = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match status {
            200 | 201 => return Ok(Ok(waited)),
            503 if started.elapsed() < BLOCKED_LIMIT => {
                std::thread::sleep(Duration::from_millis(50));
            }
            503 => {
                return Ok(Err(format!(
                    "an upload of {path} was refused for {waited} ms: {answer}"
                )));
            }
            _ => return Ok(Err(format!("PUT {path} answered {status} {answer}"))),
        }
    }
}

/// What the readers saw.
#[derive(Debug, Default)]
pub struct Reads {
    /// Whole snapshots read and verified while the host lived.
    pub whole: u64,
    /// Reads cut, refused or wrong while the host lived.
    pub violations: Vec<String>,
}

/// Reads the whole snapshot at `path` again and again until `stop` is set
/// (the host was killed): each must be a body that was sent, whole. A read
/// that fails while the host still lives (no kill within a moment) is cut.
pub fn read(
    client: &Client,
    path: &str,
    sent: &Arc<Mutex<HashSet<String>>>,
    stop: &Arc<AtomicBool>,
) -> Reads {
    let mut reads = Reads::default();
    for _ in 0..100_000 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match client.get_snapshot(path) {
            Ok(served) if served.status == 200 => {
                let announced = served.sha256.clone().unwrap_or_default();
                let known = sent
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(&announced);
                if sha256_hex(&served.bytes) == announced && known {
                    reads.whole += 1;
                } else {
                    reads.violations.push(format!(
                        "a reader got {} bytes that are not a body sent whole ({announced})",
                        served.bytes.len()
                    ));
                    break;
                }
            }
            Ok(served) if served.status == 404 => {}
            Ok(served) => {
                reads.violations.push(format!(
                    "a reader was answered {} while the host lived",
                    served.status
                ));
                break;
            }
            Err(err) => {
                // The kill, or a cut: the killer says which within a moment.
                std::thread::sleep(Duration::from_millis(500));
                if !stop.load(Ordering::Relaxed) {
                    reads
                        .violations
                        .push(format!("a read was cut while the host lived: {err}"));
                }
                break;
            }
        }
    }
    reads
}
