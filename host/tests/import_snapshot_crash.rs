//! A host killed with SIGKILL while an import streams a snapshot of many
//! chunks (a batch of them already in the KV folder and recorded under the
//! import's manifest) comes back with the agent exactly as it was; the
//! next import drops the dead one's manifest, and its sweep leaves in the
//! KV folder only the chunks the current snapshot names.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use sha2::{Digest, Sha256};
use std::{
    collections::BTreeSet,
    io::Write,
    net::TcpStream,
    path::Path,
    time::{Duration, Instant},
};
use support::{Server, admin, get_whole, patient_agent};

const AGENT: &str = "/api/towns/crash/rigs/r/agents/a";
const MIB: usize = 1024 * 1024;
/// The host's split of a snapshot into chunks (at least 4 MiB each).
const SPLIT: usize = 4 * MIB;
/// Chunks of `SPLIT` recorded together: a batch settles every 64 MiB.
const BATCH: i64 = 16;

/// `len` pseudo-random bytes (xorshift), different for every `seed`.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// A manifest holding only a snapshot of `bytes`.
fn manifest(bytes: &[u8]) -> Vec<u8> {
    format!(
        r#"{{"snapshot":{{"sha256":"{}","size":{},"event_watermark":0,"data_base64":"{}"}}}}"#,
        hex::encode(Sha256::digest(bytes)),
        bytes.len(),
        STANDARD.encode(bytes)
    )
    .into_bytes()
}

fn import(server: &Server, body: &[u8]) {
    let mut response = patient_agent()
        .put(format!("{}{AGENT}/import", server.base))
        .header("authorization", admin())
        .header("content-type", "application/json")
        .send(body)
        .expect("import");
    let text = response.body_mut().read_to_string().unwrap_or_default();
    assert_eq!(response.status(), 200, "import: {text}");
}

fn snapshot(server: &Server) -> Vec<u8> {
    get_whole(server, &format!("{AGENT}/db-snapshot"))
}

/// Chunk rows the agent's object holds, read while the host runs.
fn chunk_rows(data: &Path) -> i64 {
    let path = data.join("towns/crash/rigs/r/agents/a/agent.sqlite");
    let Ok(db) =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
    else {
        return 0;
    };
    db.query_row("SELECT COUNT(*) FROM snapshot_chunks", [], |row| row.get(0))
        .unwrap_or(0)
}

/// The chunk files of the agent's KV folder.
fn chunk_files(data: &Path) -> BTreeSet<String> {
    let dir = data.join("kv/snapshots/crash/r/a/chunks");
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The server's split of `bytes`, by name.
fn chunk_names(bytes: &[u8]) -> BTreeSet<String> {
    bytes
        .chunks(SPLIT)
        .map(|c| hex::encode(Sha256::digest(c)))
        .collect()
}

#[test]
fn a_host_killed_during_a_large_snapshot_import_keeps_the_old_snapshot_and_leaks_no_chunk() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &[]);
    let old = noise(3 * SPLIT, 1);
    import(&server, &manifest(&old));
    assert_eq!(chunk_files(data.path()), chunk_names(&old));
    let old_chunks = i64::try_from(chunk_names(&old).len()).expect("a count");

    // 80 MiB: the first 16 chunks (64 MiB) are recorded once their batch
    // settles, before the body ends.
    let large = manifest(&noise(80 * MIB, 2));
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
        .write_all(&large[..large.len() * 9 / 10])
        .expect("most of the body");
    let deadline = Instant::now() + Duration::from_secs(120);
    while chunk_rows(data.path()) < old_chunks + BATCH {
        assert!(
            Instant::now() < deadline,
            "the import never recorded chunks"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill_hard();
    assert!(
        i64::try_from(chunk_files(data.path()).len()).expect("a count") >= old_chunks + BATCH,
        "killed mid-import"
    );

    let restarted = Server::start(data.path(), &[]);
    assert!(snapshot(&restarted) == old, "the agent kept its snapshot");
    let new = noise(2 * MIB + 5, 3);
    import(&restarted, &manifest(&new));
    assert!(snapshot(&restarted) == new);
    assert_eq!(
        chunk_files(data.path()),
        chunk_names(&new),
        "only the current snapshot's chunks remain"
    );
}
