//! A fake of the workspace routes for the unit tests: an in-memory chunk store and current
//! version behind a one-request-per-connection HTTP/1.1 server, with switches for the failures
//! the client must handle.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Value, json};
use stasis_domain::chunk_store::frames::{decode_frames, encode_frame};
use stasis_domain::workspace::pages::{self, ManifestHead};
use stasis_domain::workspace::{ContentHash, TreeLimits};

use crate::{Client, Config, RetryPolicy};

#[derive(Default)]
struct Store {
    chunks: HashMap<ContentHash, Vec<u8>>,
    /// (version, head) of every version; the last is current.
    versions: Vec<(u64, ManifestHead)>,
    requests: Vec<String>,
    preconditions: Vec<String>,
    chunk_puts: u64,
    /// Names asked about by `missing` calls, all told.
    missing_names: u64,
    batch_uploads: u64,
    batch_fetches: u64,
    conflicts: u64,
    always_conflict: bool,
    forget_on_first_commit: bool,
    garble: bool,
}

/// The running fake.
pub struct FakeServer {
    url: String,
    store: Arc<Mutex<Store>>,
}

struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl FakeServer {
    pub fn start() -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let store = Arc::new(Mutex::new(Store::default()));
        let shared = Arc::clone(&store);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let store = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &store));
            }
        });
        FakeServer { url, store }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().expect("lock")
    }

    pub fn client(&self) -> Client {
        let policy = RetryPolicy {
            max_attempts: 3,
            max_elapsed: Duration::from_secs(5),
            initial_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(10),
        };
        Client::new(Config::new(&self.url, Some("t".into())).expect("config")).with_policy(policy)
    }

    pub fn requests(&self) -> Vec<String> {
        self.lock().requests.clone()
    }

    pub fn chunk_puts(&self) -> u64 {
        self.lock().chunk_puts
    }

    /// Batch uploads and batch fetches answered.
    pub fn batches(&self) -> (u64, u64) {
        let store = self.lock();
        (store.batch_uploads, store.batch_fetches)
    }

    /// Names asked about by `missing` calls so far.
    pub fn missing_names(&self) -> u64 {
        self.lock().missing_names
    }

    /// Drops every chunk and page (as a collection after another machine's versions would).
    pub fn forget_everything(&self) {
        self.lock().chunks.clear();
    }

    pub fn conflicts(&self) -> u64 {
        self.lock().conflicts
    }

    pub fn first_commit_precondition(&self) -> Option<String> {
        self.lock().preconditions.first().cloned()
    }

    pub fn last_commit_precondition(&self) -> Option<String> {
        self.lock().preconditions.last().cloned()
    }

    pub fn root_of(&self, version: u64) -> Option<ContentHash> {
        let store = self.lock();
        let found = store.versions.iter().find(|(v, _)| *v == version);
        found.map(|(_, head)| head.root_hash)
    }

    pub fn always_conflict(&self) {
        self.lock().always_conflict = true;
    }

    pub fn forget_on_first_commit(&self) {
        self.lock().forget_on_first_commit = true;
    }

    pub fn garble_chunks(&self) {
        self.lock().garble = true;
    }
}

fn serve(stream: TcpStream, store: &Mutex<Store>) {
    let Some(request) = read(&stream) else { return };
    let (status, body, etag) = {
        let mut store = store.lock().expect("lock");
        store
            .requests
            .push(format!("{} {}", request.method, request.path));
        answer(&mut store, &request)
    };
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(etag) = etag {
        head.push_str(&format!("ETag: \"{etag}\"\r\n"));
    }
    head.push_str("\r\n");
    let _ = out.write_all(head.as_bytes());
    let _ = out.write_all(&body);
}

fn read(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
    }
    let len: usize = headers
        .get("content-length")
        .map_or(Some(0), |v| v.parse().ok())?;
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn error(status: u16, code: &str, extra: Value) -> (u16, Vec<u8>, Option<ContentHash>) {
    let mut object = json!({ "code": code, "message": code });
    if let (Some(map), Value::Object(more)) = (object.as_object_mut(), extra) {
        map.extend(more);
    }
    (
        status,
        json!({ "error": object }).to_string().into_bytes(),
        None,
    )
}

fn ok(
    status: u16,
    value: &Value,
    etag: Option<ContentHash>,
) -> (u16, Vec<u8>, Option<ContentHash>) {
    (status, value.to_string().into_bytes(), etag)
}

fn answer(store: &mut Store, request: &Request) -> (u16, Vec<u8>, Option<ContentHash>) {
    let Some(rest) = request.path.split("/workspace").nth(1) else {
        return error(404, "not_found", json!({}));
    };
    match (request.method.as_str(), rest) {
        ("POST", "/missing") => {
            let asked: Value = serde_json::from_slice(&request.body).expect("json");
            let asked = asked["chunks"].as_array().expect("chunks");
            store.missing_names += asked.len() as u64;
            let missing: Vec<Value> = asked
                .iter()
                .filter(|c| {
                    let hash: ContentHash = c.as_str().expect("hex").parse().expect("hash");
                    !store.chunks.contains_key(&hash)
                })
                .cloned()
                .collect();
            ok(200, &json!({ "missing": missing }), None)
        }
        ("POST", "/batch/upload") => {
            let frames = decode_frames(&request.body).expect("whole frames");
            let mut distinct = std::collections::HashSet::new();
            let mut bytes = 0;
            for (name, chunk) in &frames {
                let hash = ContentHash::from_raw(*name);
                assert_eq!(ContentHash::of(chunk), hash, "sent under its hash");
                distinct.insert(hash);
                bytes += chunk.len();
            }
            for (name, chunk) in frames {
                store.chunk_puts += 1;
                store
                    .chunks
                    .insert(ContentHash::from_raw(name), chunk.to_vec());
            }
            store.batch_uploads += 1;
            ok(
                200,
                &json!({ "chunks": distinct.len(), "stored": distinct.len(), "bytes": bytes }),
                None,
            )
        }
        ("POST", "/batch/fetch") => {
            let asked: Value = serde_json::from_slice(&request.body).expect("json");
            let mut body = Vec::new();
            for name in asked["chunks"].as_array().expect("chunks") {
                let hash: ContentHash = name.as_str().expect("hex").parse().expect("hash");
                let Some(bytes) = store.chunks.get(&hash) else {
                    return error(404, "chunk_not_found", json!({ "missing": [hash] }));
                };
                let mut bytes = bytes.clone();
                if store.garble
                    && let Some(first) = bytes.first_mut()
                {
                    *first ^= 1;
                }
                encode_frame(&mut body, hash.as_raw(), &bytes);
            }
            store.batch_fetches += 1;
            (200, body, None)
        }
        ("PUT", "/manifest") => commit(store, request),
        ("GET", "/manifest") => match store.versions.last() {
            None => error(404, "workspace_not_found", json!({})),
            Some((version, head)) => {
                let mut body = serde_json::to_value(head).expect("head");
                body["version"] = json!(version);
                ok(200, &body, Some(head.root_hash))
            }
        },
        (method, chunk) => {
            let Some(hash) = chunk.strip_prefix("/chunks/").and_then(|h| h.parse().ok()) else {
                return error(404, "not_found", json!({}));
            };
            if method == "PUT" {
                assert_eq!(ContentHash::of(&request.body), hash, "sent under its hash");
                store.chunk_puts += 1;
                store.chunks.insert(hash, request.body.clone());
                return ok(
                    201,
                    &json!({ "sha256": hash, "size": request.body.len() }),
                    None,
                );
            }
            match store.chunks.get(&hash) {
                Some(bytes) => {
                    let mut bytes = bytes.clone();
                    if store.garble
                        && let Some(first) = bytes.first_mut()
                    {
                        *first ^= 1;
                    }
                    (200, bytes, None)
                }
                None => error(404, "chunk_not_found", json!({})),
            }
        }
    }
}

fn commit(store: &mut Store, request: &Request) -> (u16, Vec<u8>, Option<ContentHash>) {
    let current = store.versions.last().map(|(_, head)| head.root_hash);
    let precondition = match (
        request.headers.get("if-match"),
        request.headers.get("if-none-match"),
    ) {
        (Some(tag), _) => format!("If-Match: {tag}"),
        (None, Some(tag)) => format!("If-None-Match: {tag}"),
        (None, None) => String::new(),
    };
    store.preconditions.push(precondition.clone());
    let holds = match precondition.split_once(": ") {
        Some(("If-Match", tag)) => current.is_some_and(|c| tag == format!("\"{c}\"")),
        Some(("If-None-Match", _)) => current.is_none(),
        _ => true,
    };
    if !holds || store.always_conflict {
        store.conflicts += 1;
        return error(412, "precondition_failed", json!({}));
    }
    let head: ManifestHead = serde_json::from_slice(&request.body).expect("a head");
    if store.forget_on_first_commit {
        store.forget_on_first_commit = false;
        let (hash, _) = store
            .chunks
            .iter()
            .find(|(h, _)| head.pages.iter().all(|p| p.sha256 != **h))
            .map(|(h, b)| (*h, b.len()))
            .expect("a file chunk");
        store.chunks.remove(&hash);
        return error(409, "chunks_missing", json!({ "missing": [hash] }));
    }
    let lacking: Vec<ContentHash> = head
        .pages
        .iter()
        .map(|p| p.sha256)
        .filter(|h| !store.chunks.contains_key(h))
        .collect();
    if !lacking.is_empty() {
        return error(409, "chunks_missing", json!({ "missing": lacking }));
    }
    let pages: Vec<Vec<u8>> = head
        .pages
        .iter()
        .map(|p| store.chunks.get(&p.sha256).cloned().expect("pages held"))
        .collect();
    let manifest = pages::assemble(
        &head,
        pages.iter().map(Vec::as_slice),
        &TreeLimits::default(),
    )
    .expect("a valid manifest");
    let missing: Vec<ContentHash> = manifest
        .unique_chunks()
        .into_iter()
        .filter(|h| !store.chunks.contains_key(h))
        .collect();
    if !missing.is_empty() {
        return error(409, "chunks_missing", json!({ "missing": missing }));
    }
    let (status, version) = match store.versions.last() {
        Some((version, old)) if old.root_hash == head.root_hash => (200, *version),
        _ => {
            let version = store.versions.len() as u64 + 1;
            store.versions.push((version, head.clone()));
            (201, version)
        }
    };
    let files = manifest
        .entries
        .iter()
        .filter(|e| e.as_file().is_some())
        .count();
    let receipt = json!({ "version": version, "root_hash": head.root_hash,
        "entries": head.entries, "files": files, "total_size": head.total_size,
        "chunk_count": manifest.unique_chunks().len(), "page_count": head.pages.len(),
        "event_watermark": 1, "created_at": "2026-11-27T00:00:00Z" });
    ok(status, &receipt, Some(head.root_hash))
}
