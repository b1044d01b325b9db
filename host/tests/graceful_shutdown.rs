//! SIGTERM on a real host: an upload in progress completes, a live tail
//! ends cleanly (its chunked body is terminated), new connections are
//! refused, the process exits 0, and on restart every acknowledged write
//! is there.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use serde_json::{Value, json};
use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};
use support::{Server, admin, agent};

const AGENT: &str = "/api/towns/shutdown-town/rigs/r1/agents/a1";
/// The snapshot whose upload is in flight when the signal comes.
const UPLOAD: usize = 512 * 1024;

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.address()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    stream
}

/// Everything the server sends until it closes the connection.
fn read_to_close(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    stream
        .read_to_end(&mut received)
        .expect("the connection ends cleanly, before the read timeout");
    String::from_utf8_lossy(&received).into_owned()
}

fn append(server: &Server, count: usize) {
    let events: Vec<Value> = (0..count)
        .map(|n| json!({"type": "t", "data": {"n": n}}))
        .collect();
    let response = agent()
        .post(format!("{}{AGENT}/events", server.base))
        .header("Authorization", &admin())
        .send_json(json!({"events": events}))
        .expect("append");
    assert_eq!(response.status().as_u16(), 200);
}

fn sigterm(server: &Server) {
    let status = Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[test]
fn sigterm_finishes_uploads_ends_tails_refuses_new_connections_and_exits_zero() {
    let data = tempfile::tempdir().expect("temp dir");
    support::with_compiled_components(data.path());
    let mut server = Server::start(data.path(), &["--shutdown-grace", "20s"]);
    append(&server, 3);

    let mut tail = connect(&server);
    let request = format!(
        "GET {AGENT}/events HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\r\n",
        admin()
    );
    tail.write_all(request.as_bytes()).expect("tail");

    // Half of a snapshot upload, then the signal.
    let snapshot: Vec<u8> = (0..UPLOAD).map(|i| (i % 251) as u8).collect();
    let mut upload = connect(&server);
    let head = format!(
        "PUT {AGENT}/db-snapshot HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {UPLOAD}\r\n\r\n",
        admin()
    );
    upload.write_all(head.as_bytes()).expect("upload head");
    upload
        .write_all(&snapshot[..UPLOAD / 2])
        .expect("first half");
    std::thread::sleep(Duration::from_millis(300));
    sigterm(&server);

    // The tail ends cleanly: its chunked body carries its last chunk.
    let tailed = read_to_close(&mut tail);
    assert!(tailed.starts_with("HTTP/1.1 200"), "{tailed}");
    assert!(
        tailed.contains("id: 3"),
        "the tail sent the events: {tailed}"
    );
    assert!(
        tailed.ends_with("0\r\n\r\n"),
        "the tail's body was terminated: {tailed:?}"
    );

    // New connections are refused.
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(server.address()).is_ok() {
        assert!(
            Instant::now() < deadline,
            "a new connection was still accepted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // The upload in flight completes.
    upload
        .write_all(&snapshot[UPLOAD / 2..])
        .expect("second half");
    let answer = read_to_close(&mut upload);
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(status) = server.child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "the host did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(exit.code(), Some(0));

    let restarted = Server::start(data.path(), &[]);
    let events: Value = agent()
        .get(format!("{}{AGENT}/events", restarted.base))
        .header("Authorization", &admin())
        .call()
        .expect("read")
        .body_mut()
        .read_json()
        .expect("json");
    assert_eq!(
        events["events"].as_array().map(Vec::len),
        Some(3),
        "{events}"
    );
    let stored = agent()
        .get(format!("{}{AGENT}/db-snapshot", restarted.base))
        .header("Authorization", &admin())
        .call()
        .expect("download")
        .body_mut()
        .with_config()
        .limit(2 * UPLOAD as u64)
        .read_to_vec()
        .expect("bytes");
    assert!(
        stored == snapshot,
        "the snapshot acknowledged during shutdown is stored"
    );
}

#[test]
fn an_upload_still_arriving_when_the_grace_ends_gets_503_and_changes_nothing() {
    let data = tempfile::tempdir().expect("temp dir");
    support::with_compiled_components(data.path());
    let mut server = Server::start(data.path(), &["--shutdown-grace", "1s"]);
    append(&server, 1);
    let mut upload = connect(&server);
    let head = format!(
        "PUT {AGENT}/db-snapshot HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\n\
         Content-Type: application/octet-stream\r\nContent-Length: {UPLOAD}\r\n\r\n",
        admin()
    );
    upload.write_all(head.as_bytes()).expect("upload head");
    upload.write_all(&[7; UPLOAD / 2]).expect("first half");
    std::thread::sleep(Duration::from_millis(300));
    sigterm(&server);

    // The second half never comes: when the grace ends the upload is
    // answered, not cut.
    let answer = read_to_close(&mut upload);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(answer.contains(r#""code":"shutting_down""#), "{answer}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the host did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }

    let restarted = Server::start(data.path(), &[]);
    let status = agent()
        .get(format!("{}{AGENT}/db-snapshot", restarted.base))
        .header("Authorization", &admin())
        .call()
        .expect("download")
        .status();
    assert_eq!(status.as_u16(), 404, "the refused upload stored nothing");
}
