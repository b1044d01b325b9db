//! One connection over the cap is answered 503 in the contract's format,
//! and the host serves again once connections close.

use crate::{
    raw::{self, connect, read_response, send},
    start,
    support::Options,
};
use std::{
    net::TcpStream,
    time::{Duration, Instant},
};

#[test]
fn one_connection_over_the_cap_gets_503_and_health_answers_once_they_close() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start(
        data.path(),
        &["--max-connections", "2"],
        &Options::default(),
    );
    let patience = Duration::from_secs(10);
    // Two connections that have each been served hold both slots.
    let held: Vec<_> = (0..2)
        .map(|_| served_connection(&server.address()))
        .collect();

    let mut over = connect(&server.address(), patience);
    send(
        &mut over,
        &raw::get("/healthz", "X-Request-Id: over-the-cap\r\n"),
    );
    let refused = read_response(&mut over);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.header("x-request-id"), Some("over-the-cap"));
    let body: serde_json::Value = serde_json::from_str(&refused.body).expect("JSON");
    assert_eq!(body["error"]["code"], "over_capacity");

    drop(held);
    let deadline = Instant::now() + patience;
    loop {
        let mut stream = connect(&server.address(), patience);
        send(&mut stream, &raw::get("/healthz", ""));
        let status = read_response(&mut stream).status;
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {status} after the connections closed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A connection the server has served once (and so holds a slot for). A
/// connection closed just before, such as the start's readiness check, may
/// still hold its slot for a moment, so a 503 here is retried.
fn served_connection(address: &str) -> TcpStream {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut stream = connect(address, Duration::from_secs(10));
        send(&mut stream, &raw::get("/livez", ""));
        let status = read_response(&mut stream).status;
        if status == 200 {
            return stream;
        }
        assert!(Instant::now() < deadline, "no free slot: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
