//! One agent's db-snapshot (`/db-snapshot`): deterministic bodies, their
//! sha256, and the requests and assertions the snapshot cases share.
//!
//! Bodies are slices of one pseudo-random buffer, generated once, so no
//! compression can shrink them and the largest cases share their memory.
//! Cases that move tens of megabytes take the [`big_lane`] so they run one
//! at a time.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::{AgentLog, Reply, Value, admin_token, assert_error, call, now_ms, num, target};

/// Bytes stored in the agent's SQL at most; larger snapshots go to KV.
pub const INLINE_LIMIT: usize = 1_048_576;
/// The largest snapshot accepted: the suite expects the server's snapshot
/// limit set to 25 MiB (`STASIS_MAX_SNAPSHOT_BYTES=26214400`, as
/// `scripts/test` starts it) so that its over-limit cases stay small.
pub const MAX_BYTES: usize = 26_214_400;
/// The headers naming the snapshot served, lower case: on `GET` and `HEAD`.
pub const HEADERS: [&str; 4] = [
    "etag",
    "x-stasis-sha256",
    "x-stasis-snapshot-version",
    "x-stasis-event-seq",
];

/// How many different bodies of one size [`bytes`] can give.
pub const VARIANTS: usize = 64;
const POOL_BYTES: usize = MAX_BYTES + 1 + VARIANTS;
/// A 503 `snapshot_propagating` is retried this many times.
const PROPAGATION_TRIES: u32 = 10;

/// The pseudo-random buffer every body is cut from (splitmix64, fixed seed).
fn pool() -> &'static [u8] {
    static POOL: OnceLock<Vec<u8>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut state: u64 = 0x5747_4153_4953_0001;
        let mut bytes = Vec::with_capacity(POOL_BYTES + 8);
        while bytes.len() < POOL_BYTES {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
        }
        bytes.truncate(POOL_BYTES);
        bytes
    })
}

/// `len` pseudo-random bytes, the same on every run; bodies of one length
/// with different `variant`s (below [`VARIANTS`]) differ.
///
/// # Panics
/// When `len` passes `MAX_BYTES + 1` or `variant` is out of range.
pub fn bytes(len: usize, variant: usize) -> &'static [u8] {
    assert!(variant < VARIANTS, "variant {variant} ≥ {VARIANTS}");
    assert!(
        len <= MAX_BYTES + 1,
        "no body passes {} bytes",
        MAX_BYTES + 1
    );
    &pool()[variant..variant + len]
}

/// The sha256 of `bytes` as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The ETag a snapshot of `bytes` carries: its quoted sha256.
pub fn etag(bytes: &[u8]) -> String {
    format!("\"{}\"", sha256_hex(bytes))
}

/// Serialises cases that move tens of megabytes, so parallel cases do not
/// hold several copies of 25 MiB at once. Hold the guard for the whole case.
pub fn big_lane() -> MutexGuard<'static, ()> {
    static LANE: Mutex<()> = Mutex::new(());
    LANE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What `GET /db-snapshot` shows, to prove a refused request changed nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotState {
    /// The status: 200 with a snapshot, 404 without.
    pub status: u16,
    /// The values of [`HEADERS`], in that order.
    pub headers: Vec<Option<String>>,
    /// The size and sha256 of the bytes served (0 and the empty hash unless 200).
    pub size: usize,
    /// See `size`.
    pub bytes_sha256: String,
}

/// An agent in a town of its own, seen through its `/db-snapshot`.
#[derive(Debug, Clone)]
pub struct SnapshotAgent {
    /// The agent, for its path and its event log.
    pub log: AgentLog,
}

impl SnapshotAgent {
    /// An agent in a fresh town named after the case.
    pub fn fresh(case: &str) -> SnapshotAgent {
        SnapshotAgent {
            log: AgentLog::fresh(case),
        }
    }

    /// The agent's `/db-snapshot` path.
    pub fn path(&self) -> String {
        self.log.path("/db-snapshot")
    }

    /// `method` with `body` as `application/octet-stream`, an admin token and
    /// `headers`, whatever the outcome.
    pub fn upload(&self, method: &str, body: &[u8], headers: &[(&str, &str)]) -> Reply {
        let mut request =
            call(method, &self.path()).header("Content-Type", "application/octet-stream");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.body(body.to_vec()).send()
    }

    /// `PUT` with `body` and `headers`, whatever the outcome.
    pub fn put(&self, body: &[u8], headers: &[(&str, &str)]) -> Reply {
        self.upload("PUT", body, headers)
    }

    /// `PUT`s `body`, asserts the 201 answer (see [`assert_created`]) and returns it.
    pub fn store(&self, body: &[u8]) -> Value {
        assert_created(&self.put(body, &[]), body)
    }

    /// `GET` with `headers`, through a 503 `snapshot_propagating`.
    pub fn get(&self, headers: &[(&str, &str)]) -> Reply {
        settled(|| {
            let mut request = call("GET", &self.path());
            for (name, value) in headers {
                request = request.header(name, value);
            }
            request.send()
        })
    }

    /// `HEAD` with `headers` over a raw socket, through a 503: the reply's
    /// body is every byte the server sent after the head.
    pub fn head(&self, headers: &[(&str, &str)]) -> Reply {
        self.bodiless("HEAD", headers)
    }

    /// `method` with an admin token, `headers` and no body over a raw socket,
    /// through a 503: for answers that must carry no body (HEAD, 304).
    pub fn bodiless(&self, method: &str, headers: &[(&str, &str)]) -> Reply {
        let auth = format!("Bearer {}", admin_token());
        let mut all = vec![("Authorization", auth.as_str())];
        all.extend_from_slice(headers);
        settled(|| bodiless(method, &self.path(), &all))
    }

    /// `DELETE`, whatever the outcome.
    pub fn delete(&self) -> Reply {
        call("DELETE", &self.path()).send()
    }

    /// What a reader sees now.
    pub fn state(&self) -> SnapshotState {
        let reply = self.get(&[]);
        assert!(
            matches!(reply.status, 200 | 404),
            "GET /db-snapshot answers 200 or 404, got {} {:?}",
            reply.status,
            reply.text()
        );
        let served: &[u8] = if reply.status == 200 {
            &reply.body
        } else {
            &[]
        };
        SnapshotState {
            status: reply.status,
            headers: HEADERS
                .iter()
                .map(|h| reply.header(h).map(str::to_owned))
                .collect(),
            size: served.len(),
            bytes_sha256: sha256_hex(served),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &SnapshotState) {
        assert_eq!(
            &self.state(),
            before,
            "a refused request must change nothing"
        );
    }

    /// Asserts there is no snapshot: `GET` is 404 `snapshot_not_found`,
    /// `HEAD` a bodiless 404.
    pub fn assert_absent(&self) {
        assert_error(&self.get(&[]), 404, "snapshot_not_found");
        let head = self.head(&[]);
        assert_eq!(head.status, 404, "HEAD without a snapshot");
        assert!(
            head.body.is_empty(),
            "HEAD sends no body: {:?}",
            head.text()
        );
    }

    /// Asserts `GET` serves exactly `body` as the snapshot `created` (a 201
    /// answer) describes, and `HEAD` the same headers with no body.
    pub fn assert_serves(&self, body: &[u8], created: &Value) {
        let expected = expected_headers(created);
        let got = self.get(&[]);
        assert_eq!(got.status, 200, "GET /db-snapshot: {:?}", short(&got));
        assert_same_bytes(&got.body, body);
        let content_type = got.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("application/octet-stream"),
            "the bytes come as application/octet-stream, not {content_type:?}"
        );
        assert_headers(&got, &expected, "GET");
        let head = self.head(&[]);
        assert_eq!(head.status, 200, "HEAD /db-snapshot: {:?}", short(&head));
        assert!(
            head.body.is_empty(),
            "HEAD sends no body, got {} bytes",
            head.body.len()
        );
        assert_headers(&head, &expected, "HEAD");
    }
}

/// Asserts `reply` is the 201 for storing `body`: `{version, sha256, size,
/// storage, event_watermark, created_at}` with `ETag: "<sha256>"`, storage
/// `inline` up to [`INLINE_LIMIT`] and `kv` above. Returns the JSON.
pub fn assert_created(reply: &Reply, body: &[u8]) -> Value {
    assert_eq!(reply.status, 201, "storing a snapshot: {:?}", short(reply));
    let created = reply.json();
    let sha = sha256_hex(body);
    assert_eq!(created["sha256"], Value::from(sha.as_str()), "in {created}");
    assert_eq!(num(&created, "size"), body.len() as u64, "in {created}");
    let storage = if body.len() <= INLINE_LIMIT {
        "inline"
    } else {
        "kv"
    };
    assert_eq!(created["storage"], Value::from(storage), "in {created}");
    assert!(
        num(&created, "version") >= 1,
        "versions start at 1: {created}"
    );
    num(&created, "event_watermark");
    let at = num(&created, "created_at");
    let now = now_ms();
    assert!(
        at + 60_000 >= now && at <= now + 60_000,
        "created_at {at} should be a time in ms near {now}"
    );
    assert_eq!(
        reply.header("etag"),
        Some(format!("\"{sha}\"").as_str()),
        "the 201 carries the ETag"
    );
    created
}

/// The values of [`HEADERS`] a snapshot described by a 201 answer is served with.
pub fn expected_headers(created: &Value) -> [String; 4] {
    let sha = created["sha256"]
        .as_str()
        .unwrap_or_else(|| panic!("a 201 names its sha256: {created}"));
    [
        format!("\"{sha}\""),
        sha.to_owned(),
        num(created, "version").to_string(),
        num(created, "event_watermark").to_string(),
    ]
}

/// Asserts `reply` carries each of [`HEADERS`] with the `expected` value.
pub fn assert_headers(reply: &Reply, expected: &[String; 4], what: &str) {
    for (name, value) in HEADERS.iter().zip(expected) {
        assert_eq!(
            reply.header(name),
            Some(value.as_str()),
            "{what}: header {name} in {:?}",
            reply.headers
        );
    }
}

/// Asserts `got` is `want`, naming the first difference instead of
/// printing megabytes.
pub fn assert_same_bytes(got: &[u8], want: &[u8]) {
    if got == want {
        return;
    }
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    panic!(
        "served {} bytes, stored {}; first difference at {first:?}",
        got.len(),
        want.len()
    );
}

/// Status, headers and at most 2,000 bytes of text, for failure messages.
fn short(reply: &Reply) -> String {
    let text = reply.text();
    let text: String = text.chars().take(2_000).collect();
    format!("{} {:?} {text:?}", reply.status, reply.headers)
}

/// Runs `send` until it answers something other than 503 (a KV key not
/// visible yet), waiting as `Retry-After` says, at most [`PROPAGATION_TRIES`] times.
fn settled(mut send: impl FnMut() -> Reply) -> Reply {
    for _ in 1..PROPAGATION_TRIES {
        let reply = send();
        if reply.status != 503 {
            return reply;
        }
        let wait = reply
            .header("retry-after")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("a 503 carries Retry-After: {:?}", reply.headers));
        std::thread::sleep(Duration::from_secs(wait.clamp(1, 5)));
    }
    send()
}

/// Sends `method path` with `headers` and no body over a fresh connection
/// (`Connection: close`), then reads until the server closes. The reply's
/// body is every byte after the head, never decoded, so an answer that must
/// have no body is seen as sent.
///
/// # Panics
/// When the server cannot be reached or sends nothing parseable.
pub fn bodiless(method: &str, path: &str, headers: &[(&str, &str)]) -> Reply {
    let base = &target().base;
    let rest = base
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("raw requests need an http:// STASIS_URL, got {base}"));
    let (host, prefix) = rest
        .split_once('/')
        .map_or((rest, String::new()), |(h, p)| (h, format!("/{p}")));
    let mut stream =
        TcpStream::connect(host).unwrap_or_else(|e| panic!("connecting to {host}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("a read timeout can be set");
    let mut head =
        format!("{method} {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream
        .write_all(head.as_bytes())
        .unwrap_or_else(|e| panic!("{method} {path}: sending the head: {e}"));
    let received = read_head_and_trailing(&mut stream, method, path);
    let reply = parse_head(&received).unwrap_or_else(|| {
        panic!(
            "{method} {path}: unparseable response {:?}",
            String::from_utf8_lossy(&received)
        )
    });
    crate::openapi::check_head(method, path, &reply);
    reply
}

/// Reads until the server closes, or until nothing more comes within
/// [`TRAILING_WAIT`] after the head: `wrangler dev` keeps connections open a
/// few seconds despite `Connection: close`, and a body sent by mistake
/// arrives right behind the head.
fn read_head_and_trailing(stream: &mut TcpStream, method: &str, path: &str) -> Vec<u8> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                received.extend_from_slice(&chunk[..n]);
                if received.windows(4).any(|w| w == b"\r\n\r\n") {
                    stream
                        .set_read_timeout(Some(TRAILING_WAIT))
                        .expect("a read timeout can be set");
                }
            }
            Err(e) => {
                assert!(!received.is_empty(), "{method} {path}: no response ({e})");
                break;
            }
        }
    }
    received
}

/// How long a bodiless answer is watched for stray body bytes.
const TRAILING_WAIT: Duration = Duration::from_millis(500);

fn parse_head(received: &[u8]) -> Option<Reply> {
    let end = received.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&received[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Some(Reply {
        status,
        headers,
        body: received[end + 4..].to_vec(),
    })
}
