//! A stand-in for `kilo serve`'s HTTP API, as the sidecar reads it: `GET /global/health`, a live
//! `GET /event` stream the test writes events into, and `GET /session` and
//! `GET /session/{id}/message` answering what the test set.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// The runtime's state the test controls.
#[derive(Default)]
struct Shared {
    /// One sender per open `/event` stream.
    streams: Vec<Sender<String>>,
    /// `GET /session`.
    sessions: Value,
    /// `GET /session/{id}/message`, by session id.
    messages: Vec<(String, Value)>,
}

/// A fake runtime on a loopback port; it stops when the test process ends.
pub struct FakeKilo {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl FakeKilo {
    pub fn start() -> FakeKilo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Mutex::new(Shared {
            sessions: json!([]),
            ..Shared::default()
        }));
        let serving = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let shared = Arc::clone(&serving);
                std::thread::spawn(move || serve(stream, &shared));
            }
        });
        FakeKilo { url, shared }
    }

    /// Sets what `GET /session` and `GET /session/{id}/message` answer.
    pub fn set_session(&self, id: &str, updated_ms: u64, messages: Value) {
        let mut shared = self.shared.lock().expect("lock");
        shared.sessions = json!([{"id": id, "time": {"updated": updated_ms}}]);
        shared.messages.retain(|(s, _)| s != id);
        shared.messages.push((id.to_owned(), messages));
    }

    /// Sends `{type, properties}` on every open `/event` stream; false when none is open.
    pub fn emit(&self, kind: &str, properties: Value) -> bool {
        let line = format!(
            "data: {}\n\n",
            json!({"id": format!("evt_{}", rand_id()), "type": kind, "properties": properties})
        );
        let mut shared = self.shared.lock().expect("lock");
        shared.streams.retain(|s| s.send(line.clone()).is_ok());
        !shared.streams.is_empty()
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn serve(stream: TcpStream, shared: &Mutex<Shared>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let Some(request) = super::read_request(&mut reader) else {
        return;
    };
    let path = request.path().to_owned();
    if path == "/event" {
        stream_events(stream, shared);
        return;
    }
    let body = {
        let shared = shared.lock().expect("lock");
        match path.as_str() {
            "/global/health" => Some(json!({"healthy": true})),
            "/session" => Some(shared.sessions.clone()),
            other => other
                .strip_prefix("/session/")
                .and_then(|rest| rest.strip_suffix("/message"))
                .and_then(|id| shared.messages.iter().find(|(s, _)| s == id))
                .map(|(_, messages)| messages.clone()),
        }
    };
    let (status, body) = match body {
        Some(body) => ("200 OK", body.to_string()),
        None => ("404 Not Found", "{}".to_owned()),
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// An SSE body until the client goes: the test's events, and kilo's heartbeat every second.
fn stream_events(mut stream: TcpStream, shared: &Mutex<Shared>) {
    let (sender, events) = mpsc::channel();
    shared.lock().expect("lock").streams.push(sender);
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    let connected = "data: {\"type\":\"server.connected\",\"properties\":{}}\n\n";
    if stream.write_all(head.as_bytes()).is_err() || stream.write_all(connected.as_bytes()).is_err()
    {
        return;
    }
    loop {
        let line = match events.recv_timeout(Duration::from_secs(1)) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                "data: {\"type\":\"server.heartbeat\",\"properties\":{}}\n\n".to_owned()
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if stream
            .write_all(line.as_bytes())
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
    }
}
