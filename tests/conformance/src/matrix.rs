//! The auth matrix: every endpoint under every kind of credential, each
//! cell expecting its status, and every refused write followed by reads
//! showing that nothing changed.
//!
//! Each cell runs against a [`Fixture`]: a town where container
//! [`SUPERSEDED`] heartbeat first and [`CURRENT`] took over after it, with a
//! Mayor that has events, a session, a checkpoint, memory and a snapshot.
//! A cell that may change something (an allowed write) gets a fixture of
//! its own; the others share one per credential.

use crate::town::{Agent, AgentState, Town, TownState};
use crate::{Reply, Value, assert_error, call, json, snapshot, tokens};

/// The container that heartbeat first and was superseded.
pub const SUPERSEDED: &str = "c-superseded";
/// The container holding the town.
pub const CURRENT: &str = "c-current";

/// A credential a cell is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// No `Authorization` header.
    NoToken,
    /// `Bearer` and something that is no JWT.
    Malformed,
    /// A town token past its expiry.
    Expired,
    /// A token signed by a key the server does not hold.
    UnknownKey,
    /// The server's key id, another secret.
    BadSignature,
    /// A town token of another town.
    OtherTown,
    /// A read-only token of the town.
    ReadOnly,
    /// A container token of [`SUPERSEDED`].
    Superseded,
    /// A container token of [`CURRENT`].
    Current,
    /// An admin token.
    Admin,
    /// A fresh bootstrap token of the town (one per request).
    Bootstrap,
}

/// What a cell does to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Changes nothing.
    Read,
    /// May change something.
    Write,
    /// `POST /heartbeat`: a write with a rule of its own under fencing.
    Heartbeat,
    /// `POST /container-token` or `/api/token/refresh`: mints, changes nothing.
    Mint,
    /// `GET /metrics`: reads, with an admin token only.
    AdminRead,
}

/// One endpoint, as a cell sends it.
#[derive(Debug, Clone)]
pub struct Case {
    /// The method.
    pub method: &'static str,
    /// The path.
    pub path: String,
    /// A JSON body, if any.
    pub json: Option<Value>,
    /// A raw body (snapshots), if any.
    pub bytes: Option<Vec<u8>>,
    /// What it does.
    pub kind: Kind,
    /// Its status when allowed.
    pub ok: u16,
}

/// A town with a superseded and a current container and a Mayor with state.
pub struct Fixture {
    /// The town.
    pub town: Town,
    /// Its Mayor.
    pub mayor: Agent,
}

impl Fixture {
    /// A fresh fixture for the case `label`.
    pub fn new(label: &str) -> Fixture {
        let town = Town::fresh(label);
        town.heartbeat(SUPERSEDED);
        town.heartbeat(CURRENT);
        let mayor = town.agent("rig-1", "mayor");
        mayor.register("mayor");
        let running =
            json!([{"agent_id": "mayor", "rig_id": "rig-1", "role": "mayor", "session_id": "s1"}]);
        town.put_registry(CURRENT, running);
        let seq = mayor.log.append(json!([
            {"type": "message.updated", "session_id": "s1", "data": {"n": 1}},
            {"type": "message.updated", "session_id": "s1", "data": {"n": 2}},
        ]))["last_seq"]
            .as_u64()
            .unwrap_or(0);
        mayor.put_checkpoint(&json!({"step": 1}));
        mayor.put_memory("k", &json!("v"));
        mayor.put_snapshot(snapshot::bytes(2048, 0), seq);
        let staged = staged_chunk();
        let path = mayor.path(&format!(
            "/db-snapshot/chunks/{}",
            snapshot::sha256_hex(staged)
        ));
        call("PUT", &path)
            .header("Content-Type", "application/octet-stream")
            .body(staged.to_vec())
            .send()
            .expect_json(201);
        Fixture { town, mayor }
    }

    /// What a reader sees of the town and the Mayor (a superseded
    /// container's heartbeat changes nothing, `last_heartbeat_at` included).
    pub fn state(&self) -> (TownState, AgentState) {
        (self.town.state(), self.mayor.state())
    }

    /// Every endpoint, naming `container` where a body names a container.
    pub fn cases(&self, container: &str) -> Vec<Case> {
        let (t, a) = (|s: &str| self.town.path(s), |s: &str| self.mayor.path(s));
        let read = |path: String| case("GET", path, None, Kind::Read, 200);
        let write = |method, path, body: Value, ok| case(method, path, Some(body), Kind::Write, ok);
        let blob = snapshot::bytes(1024, 1).to_vec();
        let (blob_sha, staged_sha) = (
            snapshot::sha256_hex(&blob),
            snapshot::sha256_hex(staged_chunk()),
        );
        let current_sha = snapshot::sha256_hex(snapshot::bytes(2048, 0));
        let one_chunk =
            json!({"size": 1024, "sha256": staged_sha, "chunk_size": 4096, "chunks": [staged_sha]});
        let mut cases = vec![
            read(t("")),
            read(t("/container-registry")),
            read(t("/events")),
            read(t("/agents")),
            read(a("")),
            read(a("/events")),
            read(a("/sessions")),
            read(a("/sessions/s1")),
            read(a("/conversation")),
            read(a("/checkpoint")),
            read(a("/memory")),
            read(a("/memory/k")),
            read(a("/db-snapshot")),
            case("HEAD", a("/db-snapshot"), None, Kind::Read, 200),
            read(a("/db-snapshot/manifest")),
            read(a(&format!("/db-snapshot/chunks/{current_sha}"))),
            read(a("/export")),
            write("POST", t("/container-eviction"), json!({}), 202),
            case(
                "POST",
                t("/heartbeat"),
                Some(json!({"container_id": container})),
                Kind::Heartbeat,
                200,
            ),
            write(
                "PUT",
                t("/container-registry"),
                json!({"container_id": container, "agents": []}),
                200,
            ),
            write("POST", t("/mayor/message"), json!({"text": "hello"}), 200),
            write("POST", a("/inbox"), json!({"text": "hello"}), 200),
            write(
                "PUT",
                t("/container-registry/agents/rig-1/mayor"),
                json!({"container_id": container, "role": "mayor"}),
                200,
            ),
            write(
                "DELETE",
                t("/container-registry/agents/rig-1/mayor"),
                Value::Null,
                200,
            ),
            case(
                "POST",
                t("/container-token"),
                Some(json!({"container_id": container})),
                Kind::Mint,
                200,
            ),
            case("POST", "/api/token/refresh".into(), None, Kind::Mint, 200),
            // The edge serves no metrics (README, "Operating").
            case(
                "GET",
                "/metrics".into(),
                None,
                Kind::AdminRead,
                if crate::on_edge() { 404 } else { 200 },
            ),
            write("PUT", a(""), json!({"role": "mayor"}), 200),
            write("DELETE", a(""), Value::Null, 204),
            write(
                "POST",
                a("/events"),
                json!({"events": [{"type": "x"}]}),
                200,
            ),
            write(
                "PUT",
                a("/sessions/s1"),
                json!({"status": "completed"}),
                200,
            ),
            write("DELETE", a("/sessions/s1"), Value::Null, 204),
            write("PUT", a("/checkpoint"), json!({"step": 2}), 200),
            write("DELETE", a("/checkpoint"), Value::Null, 204),
            write("PUT", a("/memory/k"), json!("w"), 200),
            write("DELETE", a("/memory/k"), Value::Null, 204),
            write("DELETE", a("/db-snapshot"), Value::Null, 204),
            write(
                "POST",
                a("/db-snapshot/missing"),
                json!({"chunks": [staged_sha, blob_sha]}),
                200,
            ),
            write("PUT", a("/db-snapshot/manifest"), one_chunk, 201),
            write("PUT", a("/import"), self.mayor.export(), 200),
            write("POST", a("/dispatch"), json!({}), 200),
        ];
        for method in ["PUT", "POST"] {
            let mut upload = case(method, a("/db-snapshot"), None, Kind::Write, 201);
            upload.bytes = Some(blob.clone());
            cases.push(upload);
        }
        let chunk_path = a(&format!("/db-snapshot/chunks/{blob_sha}"));
        let mut chunk = case("PUT", chunk_path, None, Kind::Write, 201);
        chunk.bytes = Some(blob);
        cases.push(chunk);
        cases
    }
}

/// A chunk every fixture's Mayor holds and no manifest names: what a
/// manifest commit cell commits.
fn staged_chunk() -> &'static [u8] {
    snapshot::bytes(1024, 2)
}

fn case(method: &'static str, path: String, json: Option<Value>, kind: Kind, ok: u16) -> Case {
    let json = json.filter(|body| !body.is_null());
    Case {
        method,
        path,
        json,
        bytes: None,
        kind,
        ok,
    }
}

impl Credential {
    /// The container its bodies name.
    pub fn container(self) -> &'static str {
        if self == Credential::Superseded {
            SUPERSEDED
        } else {
            CURRENT
        }
    }

    /// The `Authorization` header it sends, if any.
    fn authorization(self, town: &str) -> Option<String> {
        let token = match self {
            Credential::NoToken => return None,
            Credential::Malformed => "not-a-jwt".to_owned(),
            Credential::Expired => tokens::expired_token(town),
            Credential::UnknownKey => tokens::unknown_key_token(),
            Credential::BadSignature => tokens::foreign_token(),
            Credential::OtherTown => tokens::town_token(&crate::unique_id("other-town")),
            Credential::ReadOnly => tokens::read_only_token(town),
            Credential::Superseded => tokens::container_token(town, SUPERSEDED),
            Credential::Current => tokens::container_token(town, CURRENT),
            Credential::Admin => tokens::admin_token(),
            Credential::Bootstrap => tokens::bootstrap_token(town),
        };
        Some(format!("Bearer {token}"))
    }

    /// The refusal a cell of `kind` gets: status, code and reason; `None`
    /// when it is allowed.
    pub fn refusal(self, kind: Kind, path: &str) -> Option<(u16, &'static str, &'static str)> {
        let refresh = path == "/api/token/refresh";
        match (self, kind) {
            (Credential::NoToken, _) => Some((401, "unauthorized", "missing")),
            (Credential::Malformed, _) => Some((401, "unauthorized", "malformed")),
            (Credential::Expired, _) => Some((401, "unauthorized", "expired")),
            (Credential::UnknownKey, _) => Some((401, "unauthorized", "unknown_key")),
            (Credential::BadSignature, _) => Some((401, "unauthorized", "bad_signature")),
            (Credential::Bootstrap, Kind::Mint) if path.ends_with("/container-token") => None,
            (Credential::Bootstrap, _) => Some((403, "forbidden", "bootstrap_only")),
            (Credential::Admin, Kind::AdminRead) => None,
            (_, Kind::AdminRead) => Some((403, "forbidden", "admin_only")),
            (Credential::OtherTown, _) if !refresh => Some((403, "forbidden", "other_town")),
            (Credential::ReadOnly, Kind::Write | Kind::Heartbeat) => {
                Some((403, "forbidden", "read_only"))
            }
            (Credential::Superseded, Kind::Write | Kind::Mint) => {
                Some((409, "container_fenced", ""))
            }
            _ => None,
        }
    }
}

/// Runs every cell of `credential`, asserting each status, and for each
/// refused or fenced cell that could change something, that nothing changed.
pub fn run_row(credential: Credential) {
    let container = credential.container();
    let shared = Fixture::new(&format!("matrix-{credential:?}"));
    let cases = shared.cases(container);
    let (cells, mut refused_cells) = (cases.len(), 0);
    for (index, case) in cases.into_iter().enumerate() {
        let refused = credential.refusal(case.kind, &case.path);
        refused_cells += usize::from(refused.is_some());
        let fenced_beat = credential == Credential::Superseded && case.kind == Kind::Heartbeat;
        let reads = matches!(case.kind, Kind::Read | Kind::AdminRead);
        if refused.is_some() || reads || fenced_beat {
            check_cell(&shared, credential, &case, refused);
        } else {
            let own = Fixture::new(&format!("matrix-{credential:?}-{index}"));
            let case = own.cases(container).swap_remove(index);
            check_cell(&own, credential, &case, None);
        }
    }
    eprintln!("auth matrix, {credential:?}: {cells} endpoints, {refused_cells} refused");
}

fn check_cell(
    fixture: &Fixture,
    credential: Credential,
    case: &Case,
    refused: Option<(u16, &str, &str)>,
) {
    let changes = !matches!(case.kind, Kind::Read | Kind::AdminRead);
    let before = (refused.is_some() || credential == Credential::Superseded) && changes;
    let before = before.then(|| fixture.state());
    let reply = send(fixture, credential, case);
    let what = format!("{credential:?} {} {}", case.method, case.path);
    match refused {
        Some((status, _, _)) if case.method == "HEAD" => {
            assert_eq!(reply.status, status, "{what}");
        }
        Some((status, code, reason)) => {
            let error = assert_error(&reply, status, code);
            if !reason.is_empty() {
                assert_eq!(
                    error.get("reason"),
                    Some(&json!(reason)),
                    "{what}: {error:?}"
                );
            }
            if code == "container_fenced" {
                assert_eq!(
                    error.get("current_container_id"),
                    Some(&json!(CURRENT)),
                    "{what}"
                );
            }
        }
        None => {
            assert_eq!(reply.status, case.ok, "{what}: {}", reply.text());
            if case.kind == Kind::Heartbeat && credential == Credential::Superseded {
                let body = reply.json();
                assert_eq!(body["fenced"], json!(true), "{what}: {body}");
                assert_eq!(body["current_container_id"], json!(CURRENT), "{what}");
            }
        }
    }
    if let Some(before) = &before {
        assert_eq!(&fixture.state(), before, "{what} must change nothing");
    }
    if before.is_some() && case.method == "PUT" && case.path.contains("/db-snapshot/chunks/") {
        let stored = call("GET", &case.path).send();
        assert_error(&stored, 404, "chunk_not_found");
    }
}

fn send(fixture: &Fixture, credential: Credential, case: &Case) -> Reply {
    let mut request = call(case.method, &case.path);
    request = match credential.authorization(&fixture.town.id) {
        Some(value) => request.authorization(&value),
        None => request.no_token(),
    };
    if let Some(body) = &case.json {
        request = request.json(body);
    }
    if let Some(bytes) = &case.bytes {
        request = request
            .header("Content-Type", "application/octet-stream")
            .body(bytes.clone());
    }
    request.send()
}
