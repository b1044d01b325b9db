//! Snapshots: one agent's kilo.db-sized blob stored (`PUT /db-snapshot`) and
//! read back (`GET /db-snapshot`), round after round.
//!
//! The server hashes every PUT and checks every GET (each chunk; the whole
//! file when it did not hash it itself), so the native baselines beside
//! this one are a file written, fsynced and read back, with and without
//! two sha256s of the bytes.

use super::Bounds;
use crate::{
    client::{Call, Conn, Endpoint},
    stats::Latency,
};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use hyper::Method;
use sha2::{Digest, Sha256};
use std::{
    sync::Arc,
    time::{Duration, Instant},
};

/// Bytes of the round-trip snapshot: 24 MiB.
pub const ROUND_TRIP_BYTES: usize = 24 * 1024 * 1024;

/// What the round trips measured.
#[derive(Debug, Clone, Copy)]
pub struct RoundTrips {
    /// Bytes per snapshot.
    pub bytes: usize,
    /// PUT then GET, each round.
    pub total: Latency,
    /// The PUT alone (to its 201).
    pub put: Latency,
    /// The GET alone (to the body's last byte).
    pub get: Latency,
}

/// Rounds of storing `body` as the snapshot of the agent at `agent_path`
/// and reading it back. The first round is a warm-up and is not counted.
///
/// Each round's body is [`renewed`]: every PUT stores a new version, all
/// of whose chunks are new; the body is built and, after the GET,
/// compared with what came back outside the clock.
pub async fn round_trips(
    endpoint: &Arc<Endpoint>,
    agent_path: &str,
    body: &Bytes,
    bounds: Bounds,
) -> Result<RoundTrips> {
    let mut conn = Conn::open(endpoint).await?;
    let path = format!("{agent_path}/db-snapshot");
    let mut totals = Vec::new();
    let mut puts = Vec::new();
    let mut gets = Vec::new();
    let deadline = Instant::now() + bounds.time;
    let mut round = 0u64;
    while (totals.len() as u64) < bounds.count && Instant::now() < deadline {
        let sent = renewed(body, round);
        let (put, get) = round_trip(&mut conn, &path, &sent).await?;
        if round > 0 {
            puts.push(put);
            gets.push(get);
            totals.push(put + get);
        }
        round += 1;
    }
    Ok(RoundTrips {
        bytes: body.len(),
        total: Latency::of(totals).context("no round trip finished")?,
        put: Latency::of(puts).context("no PUT finished")?,
        get: Latency::of(gets).context("no GET finished")?,
    })
}

/// Latency of PUTs of `body` (each round's [`renewed`]) as the snapshot of the
/// agent at `agent_path`, to their 201. The first is a warm-up.
pub async fn puts(
    endpoint: &Arc<Endpoint>,
    agent_path: &str,
    body: &Bytes,
    bounds: Bounds,
) -> Result<Latency> {
    let mut conn = Conn::open(endpoint).await?;
    let path = format!("{agent_path}/db-snapshot");
    let deadline = Instant::now() + bounds.time;
    let mut samples = Vec::new();
    let mut round = 0u64;
    while (samples.len() as u64) < bounds.count && Instant::now() < deadline {
        let call = Call::octets(Method::PUT, path.as_str(), renewed(body, round));
        let start = Instant::now();
        let receipt = conn.expect_ok(&call).await?;
        if round > 0 {
            samples.push(start.elapsed());
        }
        check_receipt(&receipt, body.len())?;
        round += 1;
    }
    Latency::of(samples).context("no PUT finished")
}

/// One PUT of `sent` and one GET of it back: how long each took.
async fn round_trip(conn: &mut Conn, path: &str, sent: &Bytes) -> Result<(Duration, Duration)> {
    let call = Call::octets(Method::PUT, path, sent.clone());
    let start = Instant::now();
    let receipt = conn.expect_ok(&call).await?;
    let put = start.elapsed();
    check_receipt(&receipt, sent.len())?;

    let mut read = Call::get(path);
    read.accept = Some("application/octet-stream");
    let start = Instant::now();
    let got = conn.expect_ok(&read).await?;
    let get = start.elapsed();
    if got != *sent {
        bail!(
            "GET {path} returned {} bytes that differ from the {} just stored",
            got.len(),
            sent.len()
        );
    }
    Ok((put, get))
}

/// Checks a PUT's 201 body says it stored `size` bytes.
pub fn check_receipt(receipt: &[u8], size: usize) -> Result<()> {
    let value: serde_json::Value =
        serde_json::from_slice(receipt).context("the PUT's answer is not JSON")?;
    let stored = value.get("size").and_then(serde_json::Value::as_u64);
    if stored != Some(u64::try_from(size)?) {
        bail!("the PUT stored {stored:?} bytes, {size} were sent");
    }
    Ok(())
}

/// Bytes apart at which [`renewed`] stamps a body: SQLite's page size,
/// the smallest chunk any split uses.
const STAMP_EVERY: usize = 4096;

/// A copy of `body` whose every 4 KiB page starts with `round` (XORed
/// in): no chunk of any split (the host's 4 MiB, the edge's 1 MiB, a
/// client's 32 KiB) repeats an earlier round's, so each PUT stores all of
/// its bytes anew, as the native baseline writes all of them.
pub fn renewed(body: &Bytes, round: u64) -> Bytes {
    let mut copy = body.to_vec();
    for page in copy.chunks_mut(STAMP_EVERY) {
        for (byte, stamp) in page.iter_mut().zip(round.to_le_bytes()) {
            *byte ^= stamp;
        }
    }
    Bytes::from(copy)
}

/// A SQLite database of about `bytes` (rows of pseudo-random text from
/// `seed`, four to a 4 KiB page), as its file's bytes: what a pull accepts (it runs
/// `PRAGMA quick_check`), where pseudo-random bytes would be refused.
pub fn sqlite_bytes(bytes: usize, seed: u64) -> anyhow::Result<Vec<u8>> {
    let dir = tempfile::Builder::new()
        .prefix("stasis-bench-db-")
        .tempdir()?;
    let path = dir.path().join("kilo.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.execute_batch("CREATE TABLE part (id INTEGER PRIMARY KEY, data TEXT NOT NULL)")?;
    let noise = hex::encode(random_bytes(1 << 20, seed));
    let tx = conn.unchecked_transaction()?;
    let rows = bytes.div_ceil(1024);
    for row in 0..rows {
        let at = (row * 1031) % (noise.len() - 1000);
        tx.execute(
            "INSERT INTO part (data) VALUES (?1)",
            [noise.get(at..at + 1000).unwrap_or_default()],
        )?;
    }
    tx.commit()?;
    drop(conn);
    Ok(std::fs::read(&path)?)
}

/// `len` pseudo-random bytes from `seed` (splitmix64): incompressible, the
/// same in every run.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The lowercase hex sha256 of `bytes` (the `sha2` crate, as the baselines
/// use it).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_are_repeatable_and_sized() {
        assert_eq!(random_bytes(13, 7), random_bytes(13, 7));
        assert_ne!(random_bytes(13, 7), random_bytes(13, 8));
        assert_eq!(random_bytes(13, 7).len(), 13);
    }

    #[test]
    fn a_renewed_body_differs_in_every_page() {
        let body = Bytes::from(random_bytes(3 * STAMP_EVERY + 100, 1));
        let two = renewed(&body, 2);
        assert_eq!(renewed(&body, 0), body);
        for (new, old) in two.chunks(STAMP_EVERY).zip(body.chunks(STAMP_EVERY)) {
            assert_ne!(new, old);
            assert_eq!(new[8..], old[8..]);
        }
    }

    #[test]
    fn receipts_must_state_the_size_sent() {
        assert!(check_receipt(br#"{"version":1,"size":3}"#, 3).is_ok());
        assert!(check_receipt(br#"{"version":1,"size":2}"#, 3).is_err());
        assert!(check_receipt(b"nope", 3).is_err());
    }
}
