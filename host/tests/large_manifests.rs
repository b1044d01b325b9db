//! Guards the two promises a large import and export make on the host.
//!
//! Memory: a manifest is streamed both ways, so the host's peak resident
//! set while it imports and exports an agent of about 160 MB stays far
//! below the manifest's size (the figures are printed).
//!
//! Atomicity: an import stages the manifest apart from the live state and
//! swaps it in with one commit, so a host killed with SIGKILL in the middle
//! of an import (rows already staged) comes back with the agent exactly as
//! it was, and the next import starts clean.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};
use std::{
    io::Write,
    net::TcpStream,
    path::Path,
    time::{Duration, Instant},
};
use support::{Server, admin, get_whole, patient_agent};

const AGENT: &str = "/api/towns/big/rigs/r/agents/a";

/// A manifest with `events` events of about 1 MB and a KV-sized snapshot.
fn manifest(events: usize, seed: u64) -> Vec<u8> {
    let mut body = String::with_capacity(events * 1_000_100 + 8_000_000);
    body.push_str(r#"{"format":"stasis.agent.v1","agent":{"role":"polecat","metadata":null},"#);
    body.push_str(&format!(
        r#""sessions":[{{"session_id":"s1","status":"running","metadata":null,"first_seq":1,"last_seq":{events},"event_count":{events},"created_at":1,"updated_at":{events}}}],"events":["#
    ));
    let filler: String = (0..1_000_000)
        .map(|i| char::from(b'a' + ((i as u64 * 7 + seed) % 26) as u8))
        .collect();
    for seq in 1..=events {
        if seq > 1 {
            body.push(',');
        }
        body.push_str(&format!(
            r#"{{"seq":{seq},"type":"chunk","session_id":"s1","data":{{"n":{seq},"text":"{filler}"}},"created_at":{seq}}}"#
        ));
    }
    let snapshot: Vec<u8> = (0..5 * 1024 * 1024u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    body.push_str(&format!(
        r#"],"checkpoint":{{"step":1}},"memory":[{{"key":"k","value":"v","updated_at":1}}],"snapshot":{{"sha256":"{}","size":{},"event_watermark":{events},"data_base64":"{}"}},"workspace":null,"workspace_chunks":[]}}"#,
        hex::encode(Sha256::digest(&snapshot)),
        snapshot.len(),
        STANDARD.encode(&snapshot)
    ));
    body.into_bytes()
}

fn import(server: &Server, body: Vec<u8>) -> (u16, String) {
    let mut response = patient_agent()
        .put(format!("{}{AGENT}/import", server.base))
        .header("authorization", admin())
        .header("content-type", "application/json")
        .send(&body[..])
        .expect("import");
    let status = response.status().as_u16();
    (
        status,
        response.body_mut().read_to_string().unwrap_or_default(),
    )
}

fn export(server: &Server) -> Vec<u8> {
    get_whole(server, &format!("{AGENT}/export"))
}

/// `VmHWM` (the peak resident set so far) or `VmRSS` of a process, bytes.
fn memory(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status
        .lines()
        .find(|line| line.starts_with(field))
        .unwrap_or_else(|| panic!("{field} in /proc/{pid}/status"));
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("a number of kB");
    kib * 1024
}

/// Imports `manifest` and exports it back; returns the host's peak
/// resident set afterwards.
fn round_trip(server: &Server, manifest: &[u8]) -> u64 {
    let started = Instant::now();
    let (status, body) = import(server, manifest.to_vec());
    assert_eq!(status, 200, "import: {body}");
    let imported = started.elapsed();
    let started = Instant::now();
    let exported = export(server);
    assert!(exported == manifest, "the export is the manifest imported");
    let peak = memory(server.child.id(), "VmHWM:");
    eprintln!(
        "manifest {:.1} MB: imported in {:.1} s, exported in {:.1} s; host peak RSS now {:.1} MB",
        mb(manifest.len() as u64),
        imported.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        mb(peak)
    );
    peak
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

#[test]
fn a_large_import_and_export_keep_the_host_resident_set_far_below_the_manifest() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &[]);
    round_trip(&server, &manifest(2, 1));
    let warm = memory(server.child.id(), "VmHWM:");
    let small_manifest = manifest(40, 2);
    let small = round_trip(&server, &small_manifest);
    let large_manifest = manifest(160, 3);
    let large = round_trip(&server, &large_manifest);
    // Saturating: the peak is read from /proc at moments that need not be ordered exactly.
    let (first, second) = (small.saturating_sub(warm), large.saturating_sub(small));
    eprintln!(
        "peak RSS: {:.1} MB warm, +{:.1} MB for 40 MB, +{:.1} MB more for {:.1} MB",
        mb(warm),
        mb(first),
        mb(second),
        mb(large_manifest.len() as u64)
    );
    // What the first 40 MB raise the peak by is mostly paid once (allocator arenas, caches,
    // blocking threads) and varies with the machine's load: 23 to 68 MB over runs here. The
    // promise is about size: the large manifest, 120 MB more, must raise it again by less than a
    // quarter of its size, where a host holding the manifest would add 120 MB or more.
    let more = (large_manifest.len() - small_manifest.len()) as u64;
    assert!(
        second < large_manifest.len() as u64 / 4,
        "four times the manifest raised the peak by {:.1} MB more ({:.1} MB more manifest; \
         +{:.1} MB for the first 40 MB): memory follows its size",
        mb(second),
        mb(more),
        mb(first)
    );
}

/// Rows the interrupted import staged, read from the agent's database
/// while the host still runs (WAL lets a reader in).
fn staged_events(data: &Path) -> i64 {
    let path = data.join("towns/big/rigs/r/agents/a/agent.sqlite");
    let Ok(db) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    db.query_row("SELECT COUNT(*) FROM import_events", [], |row| row.get(0))
        .unwrap_or(0)
}

#[test]
fn a_host_killed_in_the_middle_of_an_import_keeps_the_old_state() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &[]);
    let (status, body) = import(&server, manifest(2, 3));
    assert_eq!(status, 200, "the old state: {body}");
    let before = export(&server);

    let large = manifest(40, 4);
    let mut socket = TcpStream::connect(server.address()).expect("connect");
    write!(
        socket,
        "PUT {AGENT}/import HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        admin(),
        large.len()
    )
    .expect("head");
    socket
        .write_all(&large[..large.len() / 2])
        .expect("half the body");
    let deadline = Instant::now() + Duration::from_secs(30);
    while staged_events(data.path()) < 10 {
        assert!(Instant::now() < deadline, "the import never staged rows");
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill_hard();
    assert!(staged_events(data.path()) >= 10, "killed mid-import");

    let restarted = Server::start(data.path(), &[]);
    assert!(
        export(&restarted) == before,
        "the agent is exactly as before the interrupted import"
    );
    let (status, body) = import(&restarted, manifest(1, 5));
    assert_eq!(status, 200, "a new import: {body}");
    assert!(body.contains(r#""events":1"#), "{body}");
    assert_eq!(staged_events(data.path()), 0, "nothing staged is left");
}
