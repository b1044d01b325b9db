//! HTTP/1.1 written by hand over a TCP socket.
//!
//! For requests an HTTP library would tidy up or refuse to send: a path with a
//! literal `..` segment, or a body the server refuses from its
//! `Content-Length` while the client is still writing it, or anything the
//! fuzz sends ([`try_request`] reports a broken exchange instead of
//! panicking). The body is written on its own thread while the response is
//! read, so an early answer is never lost to a write error.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::{Reply, target};

/// Host and port, and the base path before `/api`, of an `http://` `STASIS_URL`.
fn authority() -> (String, String) {
    let base = &target().base;
    let rest = base
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("raw requests need an http:// STASIS_URL, got {base}"));
    match rest.split_once('/') {
        Some((host, path)) => (host.to_owned(), format!("/{path}")),
        None => (rest.to_owned(), String::new()),
    }
}

/// How a raw request frames its body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Content-Length` of the body actually sent.
    Length,
    /// `Content-Length: n` is declared, but only the given body (possibly
    /// none) is sent: the server must answer from the head alone.
    Declared(usize),
    /// `Transfer-Encoding: chunked`, no length known in advance.
    Chunked,
}

/// Sends `method path` exactly as written, with `headers`, a `Content-Length`
/// of `body`, and `Connection: close`, then reads the whole response.
///
/// # Panics
/// When the server cannot be reached or sends nothing parseable.
pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
    request_framed(method, path, headers, Framing::Length, body)
}

/// Like [`request`], with the body framed as `framing` says.
///
/// # Panics
/// When the server cannot be reached or sends nothing parseable.
pub fn request_framed(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    framing: Framing,
    body: Vec<u8>,
) -> Reply {
    try_request(
        method,
        path,
        headers,
        framing,
        body,
        Duration::from_secs(60),
    )
    .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// Like [`request_framed`], but a connection that breaks off, stays silent
/// for `timeout` or answers something that is not HTTP comes back as an
/// error saying which, instead of a panic. A `text/event-stream` answer is
/// complete once its head has arrived (the stream itself never ends).
pub fn try_request(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    framing: Framing,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Reply, String> {
    let (host, prefix) = authority();
    let mut stream = TcpStream::connect(&host).map_err(|e| format!("connecting to {host}: {e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| format!("setting a read timeout: {e}"))?;
    let mut head =
        format!("{method} {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    let body = match framing {
        Framing::Length => {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
            body
        }
        Framing::Declared(n) => {
            head.push_str(&format!("Content-Length: {n}\r\n"));
            body
        }
        Framing::Chunked => {
            head.push_str("Transfer-Encoding: chunked\r\n");
            chunk(&body)
        }
    };
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut writer = stream
        .try_clone()
        .map_err(|e| format!("cloning the TCP stream: {e}"))?;
    let sender = std::thread::spawn(move || {
        // The server may answer and close before reading everything; a
        // failed write is then expected and the answer is what counts.
        let _ = writer.write_all(head.as_bytes());
        let _ = writer.write_all(&body);
        let _ = writer.flush();
    });
    let received = read_response(&mut stream, method == "HEAD");
    // Unblocks the sender when the server stopped reading the body.
    let _ = stream.shutdown(std::net::Shutdown::Both);
    drop(stream);
    let _ = sender.join();
    let received = received?;
    let reply = parse(&received).ok_or_else(|| {
        format!(
            "unparseable response {:?}",
            String::from_utf8_lossy(&received)
        )
    })?;
    crate::openapi::check(method, path, &reply);
    Ok(reply)
}

/// Reads until the response is complete or the server closes; an error
/// when nothing at all came back.
fn read_response(stream: &mut TcpStream, head_only: bool) -> Result<Vec<u8>, String> {
    let mut received = Vec::new();
    let mut chunk = [0_u8; 64 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) if received.is_empty() => {
                return Err("the connection closed without a response".to_owned());
            }
            Ok(0) => return Ok(received),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if received.is_empty() => return Err(format!("no response ({e})")),
            Err(_) => return Ok(received),
        }
        if complete(&received, head_only) {
            return Ok(received);
        }
    }
}

/// `body` in chunks of 64 KiB, then the last chunk.
fn chunk(body: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(body.len() + body.len() / 8 + 16);
    for piece in body.chunks(64 * 1024) {
        framed.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        framed.extend_from_slice(piece);
        framed.extend_from_slice(b"\r\n");
    }
    framed.extend_from_slice(b"0\r\n\r\n");
    framed
}

/// True once `received` holds a whole response: its head when no body
/// follows (an answer to `HEAD`, a 204 or 304) or the body is an endless
/// event stream, else a body of its `Content-Length` or a last chunk.
fn complete(received: &[u8], head_only: bool) -> bool {
    let Some(end) = find(received, b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap_or_default();
    if head_only
        || matches!(status, "204" | "304")
        || head.contains("content-type: text/event-stream")
    {
        return true;
    }
    let body = &received[end + 4..];
    if head.contains("transfer-encoding: chunked") {
        return dechunk(body).is_some();
    }
    head.lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .is_some_and(|len| body.len() >= len)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse(received: &[u8]) -> Option<Reply> {
    let end = find(received, b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&received[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &received[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let stream = headers
        .iter()
        .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"));
    let body = match (chunked, stream) {
        // An event stream's start, still open: its bytes as they came.
        (true, true) => dechunk(rest).unwrap_or_else(|| rest.to_vec()),
        (true, false) => dechunk(rest)?,
        (false, _) => rest.to_vec(),
    };
    Some(Reply {
        status,
        headers,
        body,
    })
}

fn dechunk(mut rest: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = find(rest, b"\r\n")?;
        let size_text = String::from_utf8_lossy(&rest[..line_end]).into_owned();
        let size_text = size_text.split(';').next()?.trim().to_owned();
        let size = usize::from_str_radix(&size_text, 16).ok()?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(..size)?);
        rest = rest.get(size + 2..)?;
    }
}
