//! A tiny HTTP/1.1 server for the client's tests: each request is answered by a handler
//! closure and recorded. One request per connection (`Connection: close`), which is all the
//! client needs to be exercised.

#![allow(dead_code, reason = "each test file uses part of the support module")]
#![allow(clippy::expect_used, reason = "tests fail loudly")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use stasis_client::{Client, Config, RetryPolicy};

pub mod fake_kilo;

/// A request as the mock received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON request body")
    }
}

/// An answer; `truncate_to` cuts the body short (after announcing its full length) and closes;
/// `delay` waits before answering; status 0 closes the connection without any answer.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub truncate_to: Option<usize>,
    pub delay: Option<Duration>,
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            ..Response::default()
        }
    }

    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Response::new(status)
            .header("Content-Type", "application/json")
            .body(value.to_string())
    }

    pub fn error(status: u16, code: &str, message: &str) -> Self {
        Response::json(
            status,
            &serde_json::json!({"error": {"code": code, "message": message}}),
        )
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Closes the connection without answering (the request was received whole).
    pub fn hang_up() -> Self {
        Response::new(0)
    }

    pub fn delayed(mut self, by: Duration) -> Self {
        self.delay = Some(by);
        self
    }

    pub fn truncated(mut self, at: usize) -> Self {
        self.truncate_to = Some(at);
        self
    }
}

type Handler = dyn Fn(&Request) -> Response + Send + Sync;

/// A running mock server; it stops when the test process ends.
pub struct Mock {
    pub url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Mock {
    pub fn start(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                let recorded = Arc::clone(&recorded);
                std::thread::spawn(move || serve(stream, &*handler, &recorded));
            }
        });
        Mock { url, requests }
    }

    /// A server of the release before chunked snapshots (see [`without_chunk_routes`]).
    pub fn old_server(handler: impl Fn(&Request) -> Response + Send + Sync + 'static) -> Mock {
        Mock::start(without_chunk_routes(handler))
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }

    /// A client for this server with a fast retry policy.
    pub fn client(&self) -> Client {
        Client::new(Config::new(&self.url, Some("test-token".into())).expect("config"))
            .with_policy(fast_policy())
    }
}

pub fn fast_policy() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        max_elapsed: Duration::from_secs(10),
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
    }
}

fn serve(stream: TcpStream, handler: &Handler, recorded: &Mutex<Vec<Request>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let Some(request) = read_request(&mut reader) else {
        return;
    };
    recorded.lock().expect("lock").push(request.clone());
    let response = handler(&request);
    let _ = write_response(stream, &response);
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v): &(String, String)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = find("content-length") {
        let len: usize = len.parse().ok()?;
        body.resize(len, 0);
        reader.read_exact(&mut body).ok()?;
    } else if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn write_response(mut stream: TcpStream, response: &Response) -> std::io::Result<()> {
    if let Some(delay) = response.delay {
        std::thread::sleep(delay);
    }
    if response.status == 0 {
        return stream.shutdown(std::net::Shutdown::Both);
    }
    let mut head = format!("HTTP/1.1 {} Mock\r\n", response.status);
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let no_body = response.status == 304 || response.status == 204;
    if !no_body {
        head.push_str(&format!("Content-Length: {}\r\n", response.body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    let body = match response.truncate_to {
        Some(at) => &response.body[..at.min(response.body.len())],
        None => &response.body[..],
    };
    if !no_body {
        stream.write_all(body)?;
    }
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Both)
}

/// A small SQLite database with `rows` rows, as bytes, and its hex sha256.
pub fn sample_db(
    dir: &std::path::Path,
    name: &str,
    rows: u32,
) -> (std::path::PathBuf, Vec<u8>, String) {
    use sha2::Digest;
    let path = dir.join(name);
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .expect("schema");
    for i in 0..rows {
        conn.execute("INSERT INTO t (v) VALUES (?1)", [format!("row {i}")])
            .expect("insert");
    }
    drop(conn);
    let bytes = std::fs::read(&path).expect("read");
    let sha = hex::encode(sha2::Sha256::digest(&bytes));
    (path, bytes, sha)
}

/// The names in a directory, sorted.
pub fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `handler` behind a server of the release before chunked snapshots: the chunk routes are
/// paths it does not serve (404 `not_found`), so the client falls back to the whole file.
pub fn without_chunk_routes(
    handler: impl Fn(&Request) -> Response + Send + Sync + 'static,
) -> impl Fn(&Request) -> Response + Send + Sync + 'static {
    move |request: &Request| {
        let path = request.path();
        if path.ends_with("/db-snapshot/manifest")
            || path.ends_with("/db-snapshot/missing")
            || path.contains("/db-snapshot/chunks/")
        {
            return Response::error(404, "not_found", "no route for this path");
        }
        handler(request)
    }
}
