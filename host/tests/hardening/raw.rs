//! HTTP/1.1 by hand over a TCP socket, for what a client library would not
//! do: send half a head, stall a body, hold a connection idle.

use std::{
    io::{ErrorKind, Read, Write},
    net::TcpStream,
    time::Duration,
};

/// A status, the head's text (lowercase) and the body of one response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl RawResponse {
    /// The value of a header, if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        let prefix = format!("{}:", name.to_ascii_lowercase());
        self.head
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .map(str::trim)
    }
}

/// A connection to `address` whose reads give up after `read_timeout`.
pub fn connect(address: &str, read_timeout: Duration) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(read_timeout))
        .expect("read timeout");
    stream
}

/// Writes `bytes` as they are.
pub fn send(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).expect("send");
}

/// A GET of `path` that keeps the connection open.
pub fn get(path: &str, extra_headers: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra_headers}\r\n").into_bytes()
}

/// Reads one response with a `Content-Length` body.
pub fn read_response(stream: &mut TcpStream) -> RawResponse {
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = find(&received, b"\r\n\r\n") {
            break end;
        }
        let n = stream.read(&mut buffer).expect("a response");
        assert!(n > 0, "the connection closed before a response");
        received.extend_from_slice(&buffer[..n]);
    };
    let head = String::from_utf8_lossy(&received[..head_end]).to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let mut response = RawResponse {
        status,
        head,
        body: String::new(),
    };
    let length: usize = response
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = received[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buffer).expect("the body");
        assert!(n > 0, "the connection closed inside a body");
        body.extend_from_slice(&buffer[..n]);
    }
    response.body = String::from_utf8_lossy(&body).into_owned();
    response
}

/// Whether the server closed the connection before the read timeout
/// (anything it still sends is read and dropped).
pub fn is_closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(err) if matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
