//! The load a trial puts on the host until it is killed: stamped appends
//! from several producers (some retried at once, which must append
//! nothing), and snapshot pushes: whole files on both sides of the 1 MiB
//! inline limit, and pushes by chunks ([`crate::delta`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use fastrand::Rng;
use serde_json::{Value, json};

use crate::client::Client;
pub use crate::client::sha256_hex;
use crate::delta::{self, Files};

/// Batches one producer sends at most in a trial.
const MAX_BATCHES: u64 = 100_000;
/// Snapshots one trial pushes at most.
const MAX_SNAPSHOTS: u64 = 10_000;

/// One stamped append.
#[derive(Debug, Clone)]
pub struct Batch {
    /// The agent's events path.
    pub path: String,
    /// `producer_id`.
    pub producer: String,
    /// `producer_seq`.
    pub seq: u64,
    /// The events' `data`, in order.
    pub data: Vec<Value>,
    /// The seqs the host acknowledged, first and last.
    pub acked: Option<(u64, u64)>,
}

impl Batch {
    fn new(rng: &mut Rng, path: &str, producer: &str, seq: u64) -> Batch {
        let data = (0..rng.usize(1..=8))
            .map(
                |i| json!({"w": producer, "n": seq, "i": i, "pad": "x".repeat(rng.usize(..2_000))}),
            )
            .collect();
        Batch {
            path: path.to_owned(),
            producer: producer.to_owned(),
            seq,
            data,
            acked: None,
        }
    }

    /// The append body.
    pub fn body(&self) -> Value {
        let events: Vec<Value> = self
            .data
            .iter()
            .map(|data| json!({"type": "kill.test", "session_id": "s", "data": data}))
            .collect();
        json!({"events": events, "producer_id": self.producer, "producer_seq": self.seq})
    }
}

/// What an append answered: the seqs, and whether it was a duplicate.
pub fn append(client: &Client, batch: &Batch) -> Result<Result<(u64, u64, bool), String>, String> {
    let (status, body) = client.post(&batch.path, &batch.body())?;
    let first = body["first_seq"].as_u64();
    let last = body["last_seq"].as_u64();
    let duplicate = body["duplicate"].as_bool();
    Ok(match (status, first, last, duplicate) {
        (200, Some(first), Some(last), Some(duplicate)) => Ok((first, last, duplicate)),
        _ => Err(format!("{} answered {status} {body}", batch.path)),
    })
}

/// What the producers saw.
#[derive(Debug, Default)]
pub struct Appends {
    /// Acknowledged batches, with their seqs.
    pub acked: Vec<Batch>,
    /// Batches sent when the host died, answer unknown.
    pub in_flight: Vec<Batch>,
    /// Immediate retries that correctly appended nothing.
    pub retries_checked: u64,
    /// What broke the contract while the host lived.
    pub violations: Vec<String>,
}

/// Sends stamped batches to `path` as `producer` until the host dies or
/// `stop` is set.
pub fn produce(
    client: &Client,
    path: &str,
    producer: &str,
    seed: u64,
    stop: &Arc<AtomicBool>,
) -> Appends {
    let mut rng = Rng::with_seed(seed);
    let mut log = Appends::default();
    for seq in 0..MAX_BATCHES {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let mut batch = Batch::new(&mut rng, path, producer, seq);
        match append(client, &batch) {
            Err(_) => {
                log.in_flight.push(batch);
                break;
            }
            Ok(Err(problem)) => {
                log.violations.push(problem);
                break;
            }
            Ok(Ok((first, last, _))) => {
                if last + 1 - first != batch.data.len() as u64 {
                    log.violations.push(format!(
                        "{path}: {} events got seqs {first}..={last}",
                        batch.data.len()
                    ));
                }
                batch.acked = Some((first, last));
                let retry = rng.u8(..4) == 0;
                log.acked.push(batch.clone());
                if retry && !retry_appends_nothing(client, &batch, &mut log) {
                    break;
                }
            }
        }
    }
    log
}

/// Sends an acknowledged batch again; false when the host is gone.
fn retry_appends_nothing(client: &Client, batch: &Batch, log: &mut Appends) -> bool {
    match append(client, batch) {
        Err(_) => false,
        Ok(Ok((first, last, true))) if Some((first, last)) == batch.acked => {
            log.retries_checked += 1;
            true
        }
        Ok(answer) => {
            log.violations.push(format!(
                "a retry of {} #{} (acknowledged as {:?}) answered {answer:?}",
                batch.producer, batch.seq, batch.acked
            ));
            true
        }
    }
}

/// What the snapshot pusher saw.
#[derive(Debug, Default)]
pub struct Pushes {
    /// The sha256 of every body sent, acknowledged or not.
    pub sent: HashSet<String>,
    /// Acknowledged pushes.
    pub acked: u64,
    /// Of them, pushes by chunks.
    pub by_chunks: u64,
    /// The longest a chunk upload waited for a collection (ms).
    pub blocked_ms: u64,
    /// The newest acknowledged version.
    pub newest: u64,
    /// What broke the contract while the host lived.
    pub violations: Vec<String>,
}

/// Bytes on one side or the other of the 1 MiB inline limit.
pub fn snapshot_body(rng: &mut Rng) -> Vec<u8> {
    let len = if rng.bool() {
        rng.usize(10_000..900_000)
    } else {
        rng.usize(1_100_000..4_000_000)
    };
    let mut bytes = vec![0_u8; len];
    rng.fill(&mut bytes);
    bytes
}

/// Pushes snapshots to `path` until the host dies or `stop` is set: a
/// third whole, the rest by chunks. Every body is in `sent` before it goes.
pub fn push(
    client: &Client,
    path: &str,
    seed: u64,
    sent: &Arc<Mutex<HashSet<String>>>,
    stop: &Arc<AtomicBool>,
) -> Pushes {
    let mut rng = Rng::with_seed(seed);
    let mut files = Files::new(&mut rng);
    let mut log = Pushes::default();
    for _ in 0..MAX_SNAPSHOTS {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let by_chunks = rng.u8(..3) != 0;
        let bytes = if by_chunks {
            files.next(&mut rng)
        } else {
            snapshot_body(&mut rng)
        };
        let sha = sha256_hex(&bytes);
        log.sent.insert(sha.clone());
        sent.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(sha.clone());
        let answer = if by_chunks {
            match delta::push(client, path, &bytes, &sha) {
                Err(_) => break,
                Ok(pushed) => {
                    log.blocked_ms = log.blocked_ms.max(pushed.blocked_ms);
                    pushed.result.map(|receipt| (201, receipt))
                }
            }
        } else {
            match client.put_snapshot(path, &bytes, &sha) {
                Err(_) => break,
                Ok(answer) => Ok(answer),
            }
        };
        match answer {
            Ok((201, receipt)) if receipt["sha256"] == sha.as_str() => {
                log.acked += 1;
                log.by_chunks += u64::from(by_chunks);
                log.newest = log.newest.max(receipt["version"].as_u64().unwrap_or(0));
            }
            Ok((status, body)) => {
                log.violations
                    .push(format!("PUT {path} answered {status} {body}"));
                break;
            }
            Err(problem) => {
                log.violations.push(format!("a push by chunks: {problem}"));
                break;
            }
        }
    }
    log
}
