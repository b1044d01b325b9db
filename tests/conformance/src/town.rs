//! Towns and the agent endpoints beyond the event log, for the cases that
//! restore an agent after its container goes away.
//!
//! [`Town`] reaches `/api/towns/{town}`: its state, eviction, heartbeats, the
//! container registry, its own event log, the Mayor and the town's agents.
//! [`Agent`] reaches one agent's record, sessions, checkpoint, memory,
//! conversation, export / import, dispatch and kilo.db snapshot; its
//! [`AgentState`] is everything a reader can see of the agent, to prove a
//! refused request changed nothing. The free functions build the streamed
//! message events a conversation is rebuilt from, check dispatches and
//! prompts, and make and hash snapshot bytes.
//!
//! Every request carries an admin token unless a case says otherwise, and
//! every town is fresh ([`Town::fresh`]), so cases run in parallel.

use std::time::Duration;

use crate::{AgentLog, LogState, Reply, Value, assert_error, call, events, json, num, unique_id};

/// A town: `/api/towns/{town}`.
#[derive(Debug, Clone)]
pub struct Town {
    /// The town id, fresh for each case.
    pub id: String,
}

/// Everything a reader can see of a town, to prove a refused request
/// changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct TownState {
    /// The `GET /api/towns/{town}` body.
    pub town: Value,
    /// The `GET /container-registry` body.
    pub registry: Value,
    /// Every event of the town's log, in order.
    pub events: Vec<Value>,
    /// The `GET /agents` list, sorted by rig and agent.
    pub agents: Vec<Value>,
}

impl Town {
    /// A town of its own, named after the case.
    pub fn fresh(case: &str) -> Town {
        Town {
            id: unique_id(case),
        }
    }

    /// The town's path followed by `suffix` (e.g. `/heartbeat`).
    pub fn path(&self, suffix: &str) -> String {
        format!("/api/towns/{}{suffix}", self.id)
    }

    /// Agent `agent` of rig `rig` in this town.
    pub fn agent(&self, rig: &str, agent: &str) -> Agent {
        Agent {
            log: AgentLog::new(&self.id, rig, agent),
        }
    }

    /// `GET /api/towns/{town}` and its 200 body.
    pub fn get(&self) -> Value {
        call("GET", &self.path("")).send().ok()
    }

    /// `POST /container-eviction` with this JSON body, whatever the outcome.
    pub fn evict_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/container-eviction"))
            .json(body)
            .send()
    }

    /// `POST /container-eviction` for `container` and its 202 body.
    pub fn evict(&self, container: &str, reason: &str) -> Value {
        self.evict_reply(&json!({"container_id": container, "reason": reason}))
            .expect_json(202)
    }

    /// `POST /heartbeat` with this JSON body, whatever the outcome.
    pub fn heartbeat_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/heartbeat")).json(body).send()
    }

    /// `POST /heartbeat` from `container` and its 200 body.
    pub fn heartbeat(&self, container: &str) -> Value {
        self.heartbeat_reply(&json!({ "container_id": container }))
            .ok()
    }

    /// `PUT /container-registry` with this JSON body, whatever the outcome.
    pub fn put_registry_reply(&self, body: &Value) -> Reply {
        call("PUT", &self.path("/container-registry"))
            .json(body)
            .send()
    }

    /// `PUT /container-registry` naming `agents` (a JSON array) in
    /// `container`, and its 200 body.
    pub fn put_registry(&self, container: &str, agents: Value) -> Value {
        self.put_registry_reply(&json!({"container_id": container, "agents": agents}))
            .ok()
    }

    /// `GET /container-registry` and its 200 body.
    pub fn registry(&self) -> Value {
        call("GET", &self.path("/container-registry")).send().ok()
    }

    /// `GET /events?{query}` of the town's log, whatever the outcome.
    pub fn events_reply(&self, query: &str) -> Reply {
        call("GET", &self.path(&format!("/events?{query}"))).send()
    }

    /// Every event of the town's log, paging with `next_after`.
    pub fn events(&self) -> Vec<Value> {
        let mut after = 0;
        let mut all = Vec::new();
        for _ in 0..10_000 {
            let page = self.events_reply(&format!("after={after}")).ok();
            all.extend(events(&page));
            if page.get("has_more") != Some(&Value::Bool(true)) {
                return all;
            }
            let next = num(&page, "next_after");
            assert!(
                next > after,
                "next_after must move forward: {after} → {next}"
            );
            after = next;
        }
        panic!("paging the town log never ended")
    }

    /// The types of the town's events, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The town's events of type `kind`, in order.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == json!(kind))
            .collect()
    }

    /// `GET /agents`: the town's agents sorted by rig and agent.
    pub fn agents(&self) -> Vec<Value> {
        let body = call("GET", &self.path("/agents")).send().ok();
        let mut agents = body["agents"]
            .as_array()
            .unwrap_or_else(|| panic!("GET /agents has an agents array: {body}"))
            .clone();
        agents.sort_by_key(|a| (a["rig_id"].to_string(), a["agent_id"].to_string()));
        agents
    }

    /// `POST /mayor/message` with `text`, whatever the outcome.
    pub fn mayor_message(&self, text: &str) -> Reply {
        call("POST", &self.path("/mayor/message"))
            .json(&json!({ "text": text }))
            .send()
    }

    /// What a reader sees of the town now.
    pub fn state(&self) -> TownState {
        TownState {
            town: self.get(),
            registry: self.registry(),
            events: self.events(),
            agents: self.agents(),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &TownState) {
        assert_eq!(
            &self.state(),
            before,
            "a refused request must change nothing"
        );
    }
}

/// One agent: `/api/towns/{town}/rigs/{rig}/agents/{agent}` and everything
/// under it. `log` reaches its events and sessions.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The agent's event log, with its town, rig and agent ids.
    pub log: AgentLog,
}

/// Everything a reader can see of an agent, to prove a refused request
/// changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentState {
    /// Status and body of `GET` on the agent (404 while unregistered).
    pub record: (u16, Value),
    /// Its events and sessions.
    pub log: LogState,
    /// Status and body of `GET /checkpoint`.
    pub checkpoint: (u16, Value),
    /// The `GET /memory?limit=1000` body.
    pub memory: Value,
    /// Status, `X-Stasis-Sha256` and `X-Stasis-Snapshot-Version` of `GET /db-snapshot`.
    pub snapshot: (u16, Option<String>, Option<String>),
}

impl Agent {
    /// `agent-1` of `rig-1` in a fresh town named after the case.
    pub fn fresh(case: &str) -> Agent {
        Town::fresh(case).agent("rig-1", "agent-1")
    }

    /// The agent's path followed by `suffix` (e.g. `/checkpoint`).
    pub fn path(&self, suffix: &str) -> String {
        self.log.path(suffix)
    }

    /// The agent's town.
    pub fn town(&self) -> Town {
        Town {
            id: self.log.town.clone(),
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.log.agent
    }

    /// Another agent of the same town and rig.
    pub fn sibling(&self, agent: &str) -> Agent {
        Agent {
            log: self.log.sibling(agent),
        }
    }

    /// `PUT` on the agent with this JSON body, whatever the outcome.
    pub fn register_reply(&self, body: &Value) -> Reply {
        call("PUT", &self.path("")).json(body).send()
    }

    /// Registers the agent with `role` (200 or 201) and returns the record.
    pub fn register(&self, role: &str) -> Value {
        let reply = self.register_reply(&json!({ "role": role }));
        assert!(
            reply.status == 200 || reply.status == 201,
            "registering as {role}: {} {}",
            reply.status,
            reply.text()
        );
        reply.json()
    }

    /// `GET` on the agent, whatever the outcome.
    pub fn record_reply(&self) -> Reply {
        call("GET", &self.path("")).send()
    }

    /// `GET` on the agent and its 200 body.
    pub fn record(&self) -> Value {
        self.record_reply().ok()
    }

    /// `PUT /checkpoint` with `doc` and its 200 body.
    pub fn put_checkpoint(&self, doc: &Value) -> Value {
        call("PUT", &self.path("/checkpoint")).json(doc).send().ok()
    }

    /// `GET /checkpoint`, whatever the outcome.
    pub fn checkpoint_reply(&self) -> Reply {
        call("GET", &self.path("/checkpoint")).send()
    }

    /// `PUT /memory/{key}` with `value` and its 200 body.
    pub fn put_memory(&self, key: &str, value: &Value) -> Value {
        call("PUT", &self.path(&format!("/memory/{key}")))
            .json(value)
            .send()
            .ok()
    }

    /// `GET /memory/{key}`, whatever the outcome.
    pub fn memory_reply(&self, key: &str) -> Reply {
        call("GET", &self.path(&format!("/memory/{key}"))).send()
    }

    /// `GET /memory?{query}` and its 200 body.
    pub fn memory_list(&self, query: &str) -> Value {
        call("GET", &self.path(&format!("/memory?{query}")))
            .send()
            .ok()
    }

    /// The keys `GET /memory?{query}` lists, in order.
    pub fn memory_keys(&self, query: &str) -> Vec<String> {
        let body = self.memory_list(query);
        body["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("GET /memory has an entries array: {body}"))
            .iter()
            .map(|e| e["key"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// `GET /conversation?{query}`, whatever the outcome.
    pub fn conversation_reply(&self, query: &str) -> Reply {
        call("GET", &self.path(&format!("/conversation?{query}"))).send()
    }

    /// `GET /conversation?{query}` and its 200 body.
    pub fn conversation(&self, query: &str) -> Value {
        self.conversation_reply(query).ok()
    }

    /// `GET /export` and its 200 body.
    pub fn export(&self) -> Value {
        call("GET", &self.path("/export")).send().ok()
    }

    /// `PUT /import` with this manifest, whatever the outcome.
    pub fn import_reply(&self, manifest: &Value) -> Reply {
        call("PUT", &self.path("/import")).json(manifest).send()
    }

    /// `POST /dispatch` with this JSON body, whatever the outcome.
    pub fn dispatch_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/dispatch")).json(body).send()
    }

    /// `PUT /db-snapshot` with `bytes` and extra `headers`, whatever the outcome.
    pub fn put_snapshot_reply(&self, bytes: &[u8], headers: &[(&str, &str)]) -> Reply {
        let mut request = call("PUT", &self.path("/db-snapshot"))
            .header("Content-Type", "application/octet-stream");
        for (name, value) in headers {
            request = request.header(name, value);
        }
        request.body(bytes.to_vec()).send()
    }

    /// Pushes `bytes` as the agent's kilo.db, with their sha256 and the
    /// event watermark `event_seq`; returns the 201 body.
    pub fn put_snapshot(&self, bytes: &[u8], event_seq: u64) -> Value {
        self.push_snapshot(&Kilo::new(bytes.to_vec()), event_seq, None)
    }

    /// Pushes `db` as a container does: with its sha256, the event
    /// watermark `event_seq`, and `If-Match: "<replaces>"` when it means to
    /// replace the snapshot whose sha256 is `replaces`. Returns the 201 body
    /// after checking its sha256, size and `ETag`.
    pub fn push_snapshot(&self, db: &Kilo, event_seq: u64, replaces: Option<&str>) -> Value {
        let seq = event_seq.to_string();
        let if_match = replaces.map(|sha| format!("\"{sha}\""));
        let mut headers = vec![
            ("X-Stasis-Sha256", db.sha256.as_str()),
            ("X-Stasis-Event-Seq", seq.as_str()),
        ];
        if let Some(etag) = &if_match {
            headers.push(("If-Match", etag.as_str()));
        }
        let reply = self.put_snapshot_reply(&db.bytes, &headers);
        let body = reply.expect_json(201);
        assert_eq!(
            body["sha256"],
            json!(db.sha256),
            "the stored sha256: {body}"
        );
        assert_eq!(
            body["size"],
            json!(db.bytes.len()),
            "the stored size: {body}"
        );
        assert_eq!(
            reply.header("etag"),
            Some(format!("\"{}\"", db.sha256).as_str()),
            "a pushed snapshot's ETag is its quoted sha256"
        );
        body
    }

    /// `GET /db-snapshot`, waiting out `503 snapshot_propagating` as a
    /// container would (a KV key may take a moment to become visible).
    pub fn snapshot_reply(&self) -> Reply {
        let mut reply = call("GET", &self.path("/db-snapshot")).send();
        for _ in 0..20 {
            if reply.status != 503 {
                return reply;
            }
            assert_error(&reply, 503, "snapshot_propagating");
            let wait = reply
                .header("retry-after")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(1)
                .clamp(1, 5);
            std::thread::sleep(Duration::from_secs(wait));
            reply = call("GET", &self.path("/db-snapshot")).send();
        }
        reply
    }

    /// What a reader sees of the agent now.
    pub fn state(&self) -> AgentState {
        let record = self.record_reply();
        let checkpoint = self.checkpoint_reply();
        let snapshot = self.snapshot_reply();
        let header = |name: &str| snapshot.header(name).map(str::to_owned);
        AgentState {
            record: (record.status, record.json()),
            log: self.log.state(),
            checkpoint: (checkpoint.status, checkpoint.json()),
            memory: self.memory_list("limit=1000"),
            snapshot: (
                snapshot.status,
                header("x-stasis-sha256"),
                header("x-stasis-snapshot-version"),
            ),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &AgentState) {
        assert_eq!(
            &self.state(),
            before,
            "a refused request must change nothing"
        );
    }
}

/// The three events a user's message makes: `message.created`, one
/// `message_part.updated` with the full text, `message.completed`.
pub fn user_message(session: Option<&str>, id: &str, text: &str) -> Vec<Value> {
    let info = json!({"id": id, "role": "user"});
    let part = json!({"id": format!("{id}-part"), "type": "text", "text": text});
    vec![
        event("message.created", session, json!({ "info": info })),
        event(
            "message_part.updated",
            session,
            json!({"info": info, "part": part}),
        ),
        event("message.completed", session, json!({ "info": info })),
    ]
}

/// The events a streamed message makes: `message.created`, one
/// `message_part.updated` per delta, `message.completed`. Its content is the
/// deltas concatenated.
pub fn streamed(session: Option<&str>, id: &str, role: &str, deltas: &[&str]) -> Vec<Value> {
    let mut all = vec![streamed_start(session, id, role)];
    all.extend(deltas.iter().map(|d| delta(session, id, role, d)));
    all.push(event(
        "message.completed",
        session,
        json!({"info": {"id": id, "role": role}}),
    ));
    all
}

/// `message.created` for message `id`.
pub fn streamed_start(session: Option<&str>, id: &str, role: &str) -> Value {
    event(
        "message.created",
        session,
        json!({"info": {"id": id, "role": role}}),
    )
}

/// One streamed `message_part.updated` delta of message `id`'s text part.
pub fn delta(session: Option<&str>, id: &str, role: &str, piece: &str) -> Value {
    event(
        "message_part.updated",
        session,
        json!({
            "info": {"id": id, "role": role},
            "part": {"id": format!("{id}-part"), "type": "text"},
            "delta": piece,
        }),
    )
}

/// An event of type `kind` with `data`, in `session` when given.
pub fn event(kind: &str, session: Option<&str>, data: Value) -> Value {
    match session {
        Some(session) => json!({"type": kind, "session_id": session, "data": data}),
        None => json!({"type": kind, "data": data}),
    }
}

/// A finished turn as `GET /conversation` shows it.
pub fn turn(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

/// The `turns` of a conversation (or of a dispatch's `prior_conversation`).
pub fn turns(conversation: &Value) -> Vec<Value> {
    conversation["turns"]
        .as_array()
        .unwrap_or_else(|| panic!("a conversation has a turns array: {conversation}"))
        .clone()
}

/// The fields of a JSON object, sorted.
pub fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("expected a JSON object, got {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

/// Asserts `value` is an object with exactly the fields `expected`.
pub fn assert_keys(value: &Value, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|k| (*k).to_owned()).collect();
    expected.sort();
    assert_eq!(keys(value), expected, "the fields of {value}");
}

/// Asserts `dispatch` has the documented shape, and returns its prompt.
pub fn assert_dispatch_shape(dispatch: &Value) -> String {
    assert_keys(
        dispatch,
        &[
            "agent_id",
            "rig_id",
            "role",
            "checkpoint",
            "prior_conversation",
            "prompt",
            "snapshot",
            "event_watermark",
        ],
    );
    assert_keys(
        &dispatch["prior_conversation"],
        &["turns", "omitted_turns", "token_estimate", "truncated"],
    );
    let watermark = &dispatch["event_watermark"];
    assert!(
        watermark.is_u64() || watermark.is_null(),
        "event_watermark is a seq: {dispatch}"
    );
    dispatch["prompt"]
        .as_str()
        .unwrap_or_else(|| panic!("a dispatch's prompt is a string: {dispatch}"))
        .to_owned()
}

/// The wrapper's opening tag.
pub const OPEN: &str = "<prior-conversation>";
/// The wrapper's closing tag.
pub const CLOSE: &str = "</prior-conversation>";

/// Asserts `prompt` is one `<prior-conversation>` wrapper holding each of
/// `prior` (in order), followed by `newest` (which the wrapper does not
/// hold); returns the wrapper's inside.
pub fn assert_prompt(prompt: &str, prior: &[&str], newest: &str) -> String {
    assert_eq!(
        prompt.matches(OPEN).count(),
        1,
        "one opening tag: {prompt:?}"
    );
    assert_eq!(
        prompt.matches(CLOSE).count(),
        1,
        "one closing tag: {prompt:?}"
    );
    let start = prompt.find(OPEN).unwrap_or_default() + OPEN.len();
    let end = prompt.find(CLOSE).unwrap_or_default();
    assert!(
        start <= end,
        "the wrapper opens before it closes: {prompt:?}"
    );
    let inside = &prompt[start..end];
    let mut from = 0;
    for text in prior {
        let at = inside[from..]
            .find(text)
            .unwrap_or_else(|| panic!("the wrapper should hold {text:?} (in order): {prompt:?}"));
        from += at + text.len();
    }
    assert!(
        !inside.contains(newest),
        "the newest user text follows the wrapper, not inside it: {prompt:?}"
    );
    let after = &prompt[end + CLOSE.len()..];
    assert!(
        after.trim_start().starts_with(newest) && prompt.ends_with(newest),
        "the prompt ends with the newest user text {newest:?} after the wrapper: {prompt:?}"
    );
    inside.to_owned()
}

/// Asserts `reply` is a 405 whose `Allow` header and `allowed` field list
/// every method in `methods`.
pub fn assert_not_allowed(reply: &Reply, methods: &[&str]) {
    let error = assert_error(reply, 405, "method_not_allowed");
    let allow = reply
        .header("allow")
        .unwrap_or_else(|| panic!("a 405 carries an Allow header: {:?}", reply.headers))
        .to_ascii_uppercase();
    let allowed = error
        .get("allowed")
        .unwrap_or_else(|| panic!("a 405 error carries `allowed`: {error:?}"))
        .to_string()
        .to_ascii_uppercase();
    for method in methods {
        let listed = |text: &str| {
            text.split(|c: char| !c.is_ascii_alphabetic())
                .any(|word| word == *method)
        };
        assert!(listed(&allow), "Allow {allow:?} should list {method}");
        assert!(listed(&allowed), "allowed {allowed} should list {method}");
    }
}

/// Asserts a 503 carries a `Retry-After` header of whole seconds equal to
/// the error's `retry_after`.
pub fn assert_retry_after(reply: &Reply, code: &str) {
    let error = assert_error(reply, 503, code);
    let header = reply
        .header("retry-after")
        .unwrap_or_else(|| panic!("a 503 carries Retry-After: {:?}", reply.headers));
    let seconds: u64 = header
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After is whole seconds: {header:?}"));
    assert_eq!(
        error.get("retry_after"),
        Some(&json!(seconds)),
        "retry_after matches the header: {error:?}"
    );
}

/// `text` percent-encoded for a query string.
pub fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A kilo.db's bytes and their sha256, hashed once: hashing 20 MB takes
/// seconds in a debug build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kilo {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Their SHA-256, 64 lowercase hex digits.
    pub sha256: String,
}

impl Kilo {
    /// `bytes` with their sha256.
    pub fn new(bytes: Vec<u8>) -> Kilo {
        let sha256 = sha256_hex(&bytes);
        Kilo { bytes, sha256 }
    }

    /// A pseudo-random kilo.db of `len` bytes (see [`kilo_db`]).
    pub fn random(len: usize, seed: u64) -> Kilo {
        Kilo::new(kilo_db(len, seed))
    }
}

/// `len` bytes that look like a kilo.db: SQLite's header, then
/// pseudo-random bytes drawn from `seed` (xorshift64*), so no two seeds
/// share a page and nothing compresses.
pub fn kilo_db(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    bytes.extend_from_slice(b"SQLite format 3\0");
    while bytes.len() < len {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        bytes.extend_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}

/// The SHA-256 of `data` as 64 lowercase hex digits (FIPS 180-4), written
/// here so the suite checks the server's hashes with code it does not share.
pub fn sha256_hex(data: &[u8]) -> String {
    let mut state: [u32; 8] = [
        0x6a09_e667,
        0xbb67_ae85,
        0x3c6e_f372,
        0xa54f_f53a,
        0x510e_527f,
        0x9b05_688c,
        0x1f83_d9ab,
        0x5be0_cd19,
    ];
    let whole = data.len() - data.len() % 64;
    let mut tail = data[whole..].to_vec();
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    let bits = u64::try_from(data.len())
        .unwrap_or(u64::MAX)
        .wrapping_mul(8);
    tail.extend_from_slice(&bits.to_be_bytes());
    for block in data[..whole].chunks_exact(64).chain(tail.chunks_exact(64)) {
        compress(&mut state, block);
    }
    state.iter().map(|word| format!("{word:08x}")).collect()
}

/// The first 32 bits of the fractional parts of the cube roots of the first 64 primes.
#[rustfmt::skip]
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
    0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
    0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
    0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
    0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
    0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
    0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
    0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
];

fn compress(state: &mut [u32; 8], block: &[u8]) {
    let mut w = [0_u32; 64];
    for (slot, word) in w.iter_mut().zip(block.chunks_exact(4)) {
        *slot = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16]
            .wrapping_add(s0)
            .wrapping_add(w[i - 7])
            .wrapping_add(s1);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    for (k, wi) in ROUND_CONSTANTS.iter().zip(w.iter()) {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h
            .wrapping_add(s1)
            .wrapping_add(ch)
            .wrapping_add(*k)
            .wrapping_add(*wi);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
    }
    for (word, add) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = word.wrapping_add(add);
    }
}

#[cfg(test)]
mod tests {
    use super::{escape, kilo_db, sha256_hex};

    #[test]
    fn sha256_matches_the_fips_vectors() {
        let vectors: [(&[u8], &str); 3] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
        ];
        for (input, expected) in vectors {
            assert_eq!(sha256_hex(input), expected);
        }
        assert_eq!(
            sha256_hex(&vec![b'a'; 1_000_000]),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn kilo_db_is_deterministic_per_seed() {
        assert_eq!(kilo_db(1000, 7), kilo_db(1000, 7));
        assert_ne!(kilo_db(1000, 7), kilo_db(1000, 8));
        assert_eq!(kilo_db(3, 7).len(), 3);
        assert!(kilo_db(100, 1).starts_with(b"SQLite format 3\0"));
    }

    #[test]
    fn escape_keeps_unreserved_bytes_only() {
        assert_eq!(escape("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(escape("x y/é&"), "x%20y%2F%C3%A9%26");
    }
}
