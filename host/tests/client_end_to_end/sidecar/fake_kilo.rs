//! A synthetic kilo for the sidecar's tests and measurements: the parts of `kilo serve`'s API the
//! sidecar uses, driven by the test. `GET /event` streams what [`FakeKilo::emit`] sends (each
//! bus event followed by its `{"type":"sync"}` twin, as kilo does; `server.connected` first),
//! to whoever is connected at that moment: like kilo, nothing is replayed. `GET /session` and
//! `GET /session/{id}/message` answer from a store that [`FakeKilo::turn`] fills the way a kilo
//! turn does. `GET /global/health` answers 200. Only std and serde_json, so that the bench can
//! include this file with `#[path]`.

#![allow(
    dead_code,
    reason = "the tests and the measurement use different parts"
)]
#![allow(clippy::expect_used, reason = "test scaffolding fails loudly")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// One stored message: kilo's `{info, parts}`.
#[derive(Debug, Clone)]
pub struct Message {
    pub info: Value,
    pub parts: Vec<Value>,
}

#[derive(Default)]
struct Shared {
    streams: Mutex<Vec<TcpStream>>,
    /// Session id → its messages, in order.
    sessions: Mutex<BTreeMap<String, Vec<Message>>>,
    /// While set, connections are closed unanswered (a runtime that is restarting).
    refusing: AtomicBool,
    /// `/event` connections accepted so far.
    connections: AtomicU64,
    next_id: AtomicU64,
    sync_seq: AtomicU64,
}

/// The synthetic kilo.
#[derive(Clone)]
pub struct FakeKilo {
    pub base: String,
    shared: Arc<Shared>,
}

impl FakeKilo {
    /// Listens on a free loopback port.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let shared = Arc::new(Shared::default());
        let accept = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&accept);
                std::thread::spawn(move || serve(&shared, stream));
            }
        });
        FakeKilo { base, shared }
    }

    /// A fresh kilo-like id with `prefix` (`evt`, `msg`, `prt`, `ses`), increasing.
    pub fn new_id(&self, prefix: &str) -> String {
        let n = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        format!("{prefix}_{n:012}")
    }

    /// Sends one bus event and its sync twin to every open stream; answers its id.
    pub fn emit(&self, kind: &str, properties: Value) -> String {
        let id = self.new_id("evt");
        self.emit_with_id(&id, kind, &properties);
        id
    }

    /// Like [`FakeKilo::emit`] with a given id (to send one twice).
    pub fn emit_with_id(&self, id: &str, kind: &str, properties: &Value) {
        let seq = self.shared.sync_seq.fetch_add(1, Ordering::SeqCst);
        let bus = json!({"id": id, "type": kind, "properties": properties});
        let twin = json!({"type": "sync", "syncEvent": {"id": id, "type": format!("{kind}.1"),
            "seq": seq, "aggregateID": properties["sessionID"], "data": properties}, "id": id});
        self.send_lines(&format!("data: {bus}\n\ndata: {twin}\n\n"));
    }

    /// kilo's keep-alive.
    pub fn heartbeat(&self) {
        let id = self.new_id("evt");
        let line = json!({"id": id, "type": "server.heartbeat", "properties": {}});
        self.send_lines(&format!("data: {line}\n\n"));
    }

    /// Writes raw stream text to every open stream, forgetting the ones that broke.
    pub fn send_lines(&self, text: &str) {
        let mut streams = self.shared.streams.lock().expect("streams");
        streams.retain_mut(|s| s.write_all(text.as_bytes()).is_ok());
    }

    /// Open `/event` streams.
    pub fn streams(&self) -> usize {
        self.shared.streams.lock().expect("streams").len()
    }

    /// `/event` connections accepted since the start.
    pub fn connections(&self) -> u64 {
        self.shared.connections.load(Ordering::SeqCst)
    }

    /// Waits until `/event` has been opened `n` times.
    pub fn wait_connections(&self, n: u64, within: Duration) {
        let until = Instant::now() + within;
        while self.connections() < n {
            assert!(
                Instant::now() < until,
                "the sidecar never opened /event ({n})"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Closes every open stream (the events that follow reach nobody).
    pub fn drop_streams(&self) {
        let mut streams = self.shared.streams.lock().expect("streams");
        for stream in streams.drain(..) {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// While `on`, every connection is closed unanswered, as by a runtime that restarts.
    pub fn refuse(&self, on: bool) {
        self.shared.refusing.store(on, Ordering::SeqCst);
    }

    /// Stores a message (replacing one with the same id) and bumps its session's time.
    pub fn store(&self, session: &str, message: Message) {
        let mut sessions = self.shared.sessions.lock().expect("sessions");
        let messages = sessions.entry(session.to_owned()).or_default();
        match messages
            .iter_mut()
            .find(|m| m.info["id"] == message.info["id"])
        {
            Some(old) => *old = message,
            None => messages.push(message),
        }
    }

    /// One whole turn, as kilo runs it: the user's message, the reply streamed word by word,
    /// `session.idle`; stored as kilo stores it. Answers the events sent (twins not counted).
    pub fn turn(&self, session: &str, user_text: &str, reply_text: &str) -> usize {
        let (user, reply) = (self.new_id("msg"), self.new_id("msg"));
        let (user_part, reply_part) = (self.new_id("prt"), self.new_id("prt"));
        let started = now_ms();
        let user_info =
            json!({"id": user, "sessionID": session, "role": "user", "time": {"created": started}});
        let user_text_part = json!({"id": user_part, "sessionID": session, "messageID": user,
            "type": "text", "text": user_text});
        self.store(
            session,
            Message {
                info: user_info.clone(),
                parts: vec![user_text_part.clone()],
            },
        );
        let mut sent = 0;
        let mut emit = |kind: &str, properties: Value| {
            self.emit(kind, properties);
            sent += 1;
        };
        emit(
            "message.updated",
            json!({"sessionID": session, "info": user_info}),
        );
        emit(
            "message.part.updated",
            json!({"sessionID": session, "part": user_text_part, "time": started}),
        );
        emit(
            "session.status",
            json!({"sessionID": session, "status": {"type": "busy"}}),
        );
        let mut reply_info = json!({"id": reply, "sessionID": session, "role": "assistant",
            "time": {"created": now_ms()}});
        emit(
            "message.updated",
            json!({"sessionID": session, "info": reply_info}),
        );
        let mut text_part = json!({"id": reply_part, "sessionID": session, "messageID": reply,
            "type": "text", "text": "", "time": {"start": now_ms()}});
        emit(
            "message.part.updated",
            json!({"sessionID": session, "part": text_part, "time": now_ms()}),
        );
        for (i, word) in reply_text.split(' ').enumerate() {
            let delta = if i == 0 {
                word.to_owned()
            } else {
                format!(" {word}")
            };
            emit(
                "message.part.delta",
                json!({"sessionID": session, "messageID": reply,
                "partID": reply_part, "field": "text", "delta": delta}),
            );
        }
        text_part["text"] = json!(reply_text);
        text_part["time"]["end"] = json!(now_ms());
        emit(
            "message.part.updated",
            json!({"sessionID": session, "part": text_part, "time": now_ms()}),
        );
        reply_info["time"]["completed"] = json!(now_ms());
        reply_info["finish"] = json!("stop");
        self.store(
            session,
            Message {
                info: reply_info.clone(),
                parts: vec![text_part],
            },
        );
        emit(
            "message.updated",
            json!({"sessionID": session, "info": reply_info}),
        );
        emit(
            "session.status",
            json!({"sessionID": session, "status": {"type": "idle"}}),
        );
        emit("session.idle", json!({"sessionID": session}));
        sent
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn serve(shared: &Shared, mut stream: TcpStream) {
    let mut target = String::new();
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    if reader.read_line(&mut target).is_err() {
        return;
    }
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        header.clear();
    }
    if shared.refusing.load(Ordering::SeqCst) {
        return;
    }
    let path = target.split(' ').nth(1).unwrap_or_default().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let body = match segments.as_slice() {
        ["global", "health"] => json!({"healthy": true, "version": "fake"}),
        ["event"] => return open_stream(shared, stream),
        ["session"] => {
            let sessions = shared.sessions.lock().expect("sessions");
            Value::Array(
                sessions
                    .iter()
                    .map(|(id, messages)| session_json(id, messages))
                    .collect(),
            )
        }
        ["session", id, "message"] => {
            let sessions = shared.sessions.lock().expect("sessions");
            let messages = sessions.get(*id).cloned().unwrap_or_default();
            Value::Array(
                messages
                    .into_iter()
                    .map(|m| json!({"info": m.info, "parts": m.parts}))
                    .collect(),
            )
        }
        _ => {
            let _ = stream.write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            return;
        }
    };
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body.as_bytes()));
}

fn session_json(id: &str, messages: &[Message]) -> Value {
    let times = messages
        .iter()
        .filter_map(|m| m.info["time"]["created"].as_u64());
    let updated = messages
        .iter()
        .filter_map(|m| m.info["time"]["completed"].as_u64())
        .chain(times.clone())
        .max()
        .unwrap_or(0);
    json!({"id": id, "title": "fake", "time": {"created": times.min().unwrap_or(0), "updated": updated}})
}

fn open_stream(shared: &Shared, mut stream: TcpStream) {
    let connected = json!({"id": "evt_connected", "type": "server.connected", "properties": {}});
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\ndata: {connected}\n\n"
    );
    let mut streams = shared.streams.lock().expect("streams");
    if stream.write_all(head.as_bytes()).is_ok() {
        let _ = stream.set_nodelay(true);
        streams.push(stream);
        shared.connections.fetch_add(1, Ordering::SeqCst);
    }
}
