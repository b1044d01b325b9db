//! A connection is closed when its head is late, when it idles between
//! requests, or when its body stalls; a slow but live body and a live tail
//! are not.

use crate::{
    raw::{self, connect, is_closed_by_server, read_response, send},
    start,
    support::{Options, admin},
};
use std::{
    thread::sleep,
    time::{Duration, Instant},
};

/// Far longer than any timeout set below: a socket still open after this
/// was never going to be closed.
const PATIENCE: Duration = Duration::from_secs(10);

#[test]
fn a_silent_connection_and_a_partial_head_are_closed_after_the_header_timeout() {
    let data = tempfile::tempdir().expect("temp dir");
    let flags = ["--header-timeout", "1s", "--idle-timeout", "60s"];
    let server = start(data.path(), &flags, &Options::default());

    let mut silent = connect(&server.address(), PATIENCE);
    let mut partial = connect(&server.address(), PATIENCE);
    send(&mut partial, b"GET /livez HTTP/1.1\r\nHost: test\r\n");

    assert!(
        is_closed_by_server(&mut silent),
        "a connection that sends nothing"
    );
    assert!(is_closed_by_server(&mut partial), "a head that never ends");
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let data = tempfile::tempdir().expect("temp dir");
    // The header timeout is long, so only the idle timeout can close it.
    let flags = ["--header-timeout", "60s", "--idle-timeout", "2s"];
    let server = start(data.path(), &flags, &Options::default());
    let mut stream = connect(&server.address(), PATIENCE);

    send(&mut stream, &raw::get("/livez", ""));
    assert_eq!(read_response(&mut stream).status, 200);
    send(&mut stream, &raw::get("/livez", ""));
    assert_eq!(
        read_response(&mut stream).status,
        200,
        "keep-alive works within the idle timeout"
    );
    assert!(is_closed_by_server(&mut stream));
}

#[test]
fn a_stalled_body_is_answered_408_and_closed() {
    let data = tempfile::tempdir().expect("temp dir");
    let flags = ["--body-rate-window", "1s", "--body-min-rate", "1000"];
    let server = start(data.path(), &flags, &Options::default());
    let mut stream = connect(&server.address(), PATIENCE);
    let head = format!(
        "PUT /api/towns/t/rigs/r/agents/a/checkpoint HTTP/1.1\r\nHost: test\r\n\
         Authorization: {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
        admin()
    );
    send(&mut stream, head.as_bytes());
    send(&mut stream, b"{\"a\":");

    let response = read_response(&mut stream);
    assert_eq!(response.status, 408, "{response:?}");
    assert!(response.body.contains("\"code\":\"body_too_slow\""));
    assert!(is_closed_by_server(&mut stream));
    let checkpoint = crate::support::agent()
        .get(format!(
            "{}/api/towns/t/rigs/r/agents/a/checkpoint",
            server.base
        ))
        .header("authorization", admin())
        .call()
        .expect("GET checkpoint");
    assert_eq!(checkpoint.status(), 404, "the refused body changed nothing");
}

#[test]
fn a_slow_but_live_body_is_read_whole() {
    let data = tempfile::tempdir().expect("temp dir");
    let flags = ["--body-rate-window", "1s", "--body-min-rate", "1000"];
    let server = start(data.path(), &flags, &Options::default());
    let mut stream = connect(&server.address(), PATIENCE);
    let body = format!("{{\"note\":\"{}\"}}", "x".repeat(4_000));
    let head = format!(
        "PUT /api/towns/t/rigs/r/agents/a/checkpoint HTTP/1.1\r\nHost: test\r\n\
         Authorization: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        admin(),
        body.len()
    );
    send(&mut stream, head.as_bytes());
    // About 3,000 bytes a second, three times the minimum, over 1.3 s:
    // more than one window.
    let started = Instant::now();
    for piece in body.as_bytes().chunks(300) {
        send(&mut stream, piece);
        sleep(Duration::from_millis(100));
    }
    assert!(
        started.elapsed() > Duration::from_secs(1),
        "it spans windows"
    );
    let response = read_response(&mut stream);
    assert_eq!(response.status, 200, "{response:?}");
}

#[test]
fn a_live_tail_outlasts_the_idle_and_header_timeouts() {
    let data = tempfile::tempdir().expect("temp dir");
    let flags = ["--header-timeout", "1s", "--idle-timeout", "1s"];
    let server = start(data.path(), &flags, &Options::default());
    let events = format!("{}/api/towns/t/rigs/r/agents/a/events", server.base);
    let mut tail = connect(&server.address(), PATIENCE);
    let accept = format!(
        "Authorization: {}\r\nAccept: text/event-stream\r\n",
        admin()
    );
    send(
        &mut tail,
        &raw::get("/api/towns/t/rigs/r/agents/a/events", &accept),
    );
    let mut seen = String::new();
    read_until(&mut tail, &mut seen, "stasis event stream");

    sleep(Duration::from_secs(3));
    crate::support::agent()
        .post(&events)
        .header("authorization", admin())
        .send_json(serde_json::json!({"events": [{"type": "t", "data": {"late": true}}]}))
        .expect("append");
    read_until(&mut tail, &mut seen, "\"late\"");
}

/// Reads from a streaming response until `needle` has arrived.
pub fn read_until(stream: &mut std::net::TcpStream, seen: &mut String, needle: &str) {
    use std::io::Read;
    let mut buffer = [0u8; 4096];
    while !seen.contains(needle) {
        let n = stream
            .read(&mut buffer)
            .unwrap_or_else(|err| panic!("waiting for {needle:?}: {err}; got {seen:?}"));
        assert!(n > 0, "the stream closed before {needle:?}; got {seen:?}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
}
