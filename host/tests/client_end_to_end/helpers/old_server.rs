//! A server of the release before chunked snapshots, made from the real one: a forwarding proxy
//! that answers the chunk routes (`.../db-snapshot/missing`, `/manifest`, `/chunks/...`) with the
//! 404 `not_found` stasis gives a path it does not serve, and passes every other request to the
//! real host, one request per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The proxy: its base URL and how many chunk-route requests it refused.
pub struct OldServer {
    pub base: String,
    refused: Arc<AtomicUsize>,
}

impl OldServer {
    /// Requests to the chunk routes answered 404 so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

/// Starts a proxy in front of `upstream` (`http://host:port`); it lives until the test ends.
pub fn old_server(upstream: &str) -> OldServer {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let upstream = upstream
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let refused = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&refused);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (upstream, counter) = (upstream.clone(), Arc::clone(&counter));
            std::thread::spawn(move || {
                // A broken exchange shows up as the client's own error.
                let _ = forward(stream, &upstream, &counter);
            });
        }
    });
    OldServer { base, refused }
}

fn forward(client: TcpStream, upstream: &str, refused: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut head = Vec::new();
    let mut length = 0usize;
    let mut path = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        if path.is_empty() {
            path = line.split(' ').nth(1).unwrap_or_default().to_owned();
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("connection:") {
            continue;
        }
        if line == "\r\n" {
            head.extend_from_slice(b"Connection: close\r\n\r\n");
            break;
        }
        head.extend_from_slice(line.as_bytes());
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let mut client = client;
    let path = path.split('?').next().unwrap_or_default();
    if path.ends_with("/db-snapshot/missing")
        || path.ends_with("/db-snapshot/manifest")
        || path.contains("/db-snapshot/chunks/")
    {
        refused.fetch_add(1, Ordering::SeqCst);
        let answer = r#"{"error":{"code":"not_found","message":"no route for this path"}}"#;
        write!(
            client,
            "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{answer}",
            answer.len()
        )?;
        return client.flush();
    }
    let mut server = TcpStream::connect(upstream)?;
    server.write_all(&head)?;
    server.write_all(&body)?;
    std::io::copy(&mut server, &mut client)?;
    client.flush()
}
