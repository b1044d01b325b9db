//! On a full disk the host still reads, lists and deletes, so that space
//! can be freed through the API: a snapshot's chunks deleted make room for
//! writes again.
//!
//! The data folder is a small tmpfs, mounted for the test (root only); the
//! test says why and passes without checking when it cannot mount one.

use crate::support::{self, Options, Server, admin, agent, eventually};
use serde_json::{Value, json};
use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
};

/// Room left on the tmpfs besides the compiled components.
const ROOM: u64 = 24 << 20;
/// The host's `--disk-reserve`.
const RESERVE: u64 = 4 << 20;
/// A snapshot above the inline limit, so that it is stored as chunks in
/// the KV folder (4 MiB each on the host).
const SNAPSHOT_BYTES: usize = 9 << 20;

#[test]
fn on_a_full_disk_reads_lists_and_deletes_answer_and_free_space() {
    let Some(mount) = Tmpfs::mount() else {
        return;
    };
    let data = mount.path.join("data");
    let flags = ["--disk-reserve", &RESERVE.to_string()];
    let server = Server::start_with(&data, &flags, &Options::default());
    for agent_id in ["keeper", "leaver"] {
        let role = br#"{"role": "polecat"}"#;
        let (status, body) = send(&server, "PUT", agent_id, Some(role));
        assert!(
            status == 200 || status == 201,
            "PUT {agent_id}: {status} {body}"
        );
        append(&server, agent_id, json!({"n": 1})).expect("an append before the disk fills");
    }
    let snapshot: Vec<u8> = (0..SNAPSHOT_BYTES).map(|i| (i * 7 % 251) as u8).collect();
    let stored = send(&server, "PUT", "keeper/db-snapshot", Some(&snapshot));
    assert_eq!(stored.0, 201, "{stored:?}");

    let filler = fill(&mount.path);
    let full = append(&server, "keeper", json!({"n": 2})).expect_err("the disk is full");
    assert!(
        full.starts_with("507") && full.contains("storage_full"),
        "{full}"
    );

    let (status, body) = send_to(&format!("{}/api/towns/t/agents", server.base), "GET", None);
    assert_eq!(status, 200, "GET /agents on a full disk: {body}");
    let listing: Value = serde_json::from_str(&body).expect("a JSON listing");
    assert_eq!(
        listing["agents"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
    for path in ["keeper", "keeper/events", "leaver/events"] {
        let (status, body) = send(&server, "GET", path, None);
        assert_eq!(status, 200, "GET {path} on a full disk: {body:?}");
    }
    let (status, _) = send(&server, "GET", "keeper/db-snapshot", None);
    assert_eq!(status, 200, "the snapshot reads on a full disk");
    let (status, body) = send(&server, "DELETE", "leaver", None);
    assert!(
        status == 200 || status == 204,
        "DELETE agent on a full disk: {status} {body:?}"
    );
    let (status, body) = send(&server, "DELETE", "keeper/db-snapshot", None);
    assert_eq!(status, 204, "DELETE db-snapshot on a full disk: {body:?}");

    // The snapshot's chunks are collected after the answer; the room they
    // leave takes writes again.
    eventually("an append after the snapshot was deleted", || {
        append(&server, "keeper", json!({"n": 3}))
    });
    let (status, _) = send(&server, "GET", "leaver", None);
    assert_eq!(status, 404, "the deleted agent is gone");
    drop(filler);
}

/// A tmpfs of the compiled components' size plus [`ROOM`], unmounted on drop.
struct Tmpfs {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Tmpfs {
    /// `None` (and why, printed) when no tmpfs can be mounted here.
    fn mount() -> Option<Self> {
        let staging = tempfile::tempdir().expect("temp dir");
        support::with_compiled_components(staging.path());
        let components: u64 = std::fs::read_dir(staging.path().join("cache"))
            .expect("the compiled components")
            .filter_map(|entry| entry.ok()?.metadata().ok())
            .map(|meta| meta.len())
            .sum();
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("mnt");
        std::fs::create_dir(&path).expect("mount point");
        let size = format!("size={}", components + ROOM);
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &size, "tmpfs"])
            .arg(&path)
            .output();
        match mounted {
            Ok(output) if output.status.success() => {}
            other => {
                eprintln!(
                    "SKIPPED: the disk-full test needs to mount a tmpfs (run as root): {:?}",
                    other.map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
                );
                return None;
            }
        }
        let mount = Self { _dir: dir, path };
        support::with_compiled_components(&mount.path.join("data"));
        Some(mount)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// Writes a file under `dir` until the filesystem is full.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("filler");
    let block = vec![1u8; 64 << 10];
    while file.write_all(&block).is_ok() {}
    // The last partial block, byte by byte, so that not even a page is left.
    while file.write_all(&[1]).is_ok() {}
    path
}

/// `method` on the agent path `path` (under `/api/towns/t/rigs/r/agents`)
/// as admin: the status and the body as text.
fn send(server: &Server, method: &str, path: &str, body: Option<&[u8]>) -> (u16, String) {
    send_to(&url(server, path), method, body)
}

fn send_to(url: &str, method: &str, body: Option<&[u8]>) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("authorization", admin());
    let response = match body {
        Some(bytes) => agent().run(
            request
                .header(
                    "content-type",
                    if bytes.starts_with(b"{") {
                        "application/json"
                    } else {
                        "application/octet-stream"
                    },
                )
                .body(bytes.to_vec())
                .expect("a request"),
        ),
        None => agent().run(request.body(()).expect("a request")),
    };
    match response {
        Ok(mut response) => {
            let status = response.status().as_u16();
            let text = if method == "GET" && url.ends_with("db-snapshot") {
                let bytes = response
                    .body_mut()
                    .with_config()
                    .limit(1 << 30)
                    .read_to_vec();
                format!("{} bytes", bytes.map_or(0, |b| b.len()))
            } else {
                response.body_mut().read_to_string().unwrap_or_default()
            };
            (status, text)
        }
        Err(err) => (0, err.to_string()),
    }
}

fn url(server: &Server, path: &str) -> String {
    let path = if path.is_empty() {
        String::new()
    } else {
        format!("/{path}")
    };
    format!("{}/api/towns/t/rigs/r/agents{path}", server.base)
}

/// One event appended as admin; the refusal as text.
fn append(server: &Server, agent_id: &str, data: Value) -> Result<(), String> {
    let response = agent()
        .post(url(server, &format!("{agent_id}/events")))
        .header("authorization", admin())
        .send_json(json!({"events": [{"type": "t", "data": data}]}));
    match response {
        Ok(response) if response.status().is_success() => Ok(()),
        Ok(mut response) => Err(format!(
            "{} {}",
            response.status(),
            response.body_mut().read_to_string().unwrap_or_default()
        )),
        Err(err) => Err(err.to_string()),
    }
}
