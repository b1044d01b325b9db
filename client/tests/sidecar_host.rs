//! The sidecar and boot against a real stasis server (`STASIS_URL`, `STASIS_SECRET`; ignored in
//! a plain `cargo test`, `scripts/test` runs them against the host it starts), with a stand-in
//! for `kilo serve` (`support::fake_kilo`) and real kilo.db files.
//!
//! Guards three ways an agent came back wrong: a turn's end whose snapshot watermark stayed
//! before the turn (the database was stored by a periodic push before `session.idle` was
//! acknowledged); a restarted sidecar storing again what the previous one had stored (its
//! resync re-reads the runtime); and a boot after a clean drain asking a dispatch for agents
//! whose kilo.db holds everything.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use stasis_api::auth::{Grant, KeyRing, KeySettings, Scope};
use stasis_client::boot::{self, BootOptions};
use stasis_client::sidecar::{Report, Sidecar, SidecarOptions, StopHandle};
use stasis_client::snapshot::{self, PushOptions};
use stasis_client::{AgentRef, Client, Config, town};
use support::fake_kilo::FakeKilo;

const HOW: &str = "these tests need a stasis server: STASIS_URL=http://127.0.0.1:8787 \
    STASIS_SECRET=<its secret> cargo test -p stasis-client --test sidecar_host -- --ignored";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A town of its own, named after the case.
fn fresh_town(case: &str) -> String {
    format!("t-{case}-{}", now_ms())
}

/// A client of the server under test with a token for `town`.
fn client(town: &str) -> Client {
    let url = std::env::var("STASIS_URL").unwrap_or_else(|_| panic!("{HOW}"));
    let secret = std::env::var("STASIS_SECRET").unwrap_or_else(|_| panic!("{HOW}"));
    let settings = KeySettings {
        secret: Some(&secret),
        keys: None,
        signing_key_id: None,
    };
    let keys = KeyRing::from_settings(&settings)
        .expect("the secret is accepted")
        .expect("a key");
    let now_s = now_ms() / 1000;
    let grant = Grant::new(Scope::Town(town.to_owned()));
    let token = keys
        .mint(&grant, now_s, Duration::from_secs(3600))
        .expect("a token");
    Client::new(Config::new(&url, Some(token)).expect("a config"))
}

/// Checks `check` every 100 ms until it gives a value, for at most `within`.
fn wait_for<T>(what: &str, within: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not so after {within:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A real SQLite database in WAL mode with one row.
fn kilo_db(path: &Path, row: &str) {
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("folder");
    let conn = rusqlite::Connection::open(path).expect("open");
    conn.pragma_update(None, "journal_mode", "wal")
        .expect("wal");
    conn.execute_batch("CREATE TABLE IF NOT EXISTS t (x TEXT)")
        .expect("schema");
    conn.execute("INSERT INTO t VALUES (?1)", [row])
        .expect("row");
}

/// Every retained event of `agent` (with `query`, e.g. `&type=x`).
fn events(client: &Client, agent: &AgentRef, query: &str) -> Vec<Value> {
    let page: Value = client
        .get_json(&agent.path(&format!("/events?limit=10000{query}")), None)
        .expect("the log reads");
    page["events"].as_array().cloned().unwrap_or_default()
}

/// The stored snapshot's watermark, if there is a snapshot.
fn snapshot_watermark(client: &Client, agent: &AgentRef) -> Option<u64> {
    let agent_record: Value = client.get_json(&agent.path(""), None).ok()?;
    agent_record["snapshot"]["event_watermark"].as_u64()
}

/// A sidecar running in a thread.
struct Running {
    stop: StopHandle,
    thread: JoinHandle<Report>,
}

impl Running {
    fn start(
        client: &Client,
        agent: &AgentRef,
        kilo: &FakeKilo,
        container: &str,
        dir: &Path,
    ) -> Running {
        let mut options = SidecarOptions::new(
            agent.clone(),
            kilo.url.clone(),
            dir.join("kilo.db"),
            container.to_owned(),
            dir.join(format!("state-{container}")),
        );
        options.snapshot_interval = Duration::from_millis(200);
        options.start_timeout = Duration::from_secs(20);
        options.shutdown_budget = Duration::from_secs(20);
        let label = container.to_owned();
        let log = Arc::new(move |line: &str| eprintln!("sidecar {label}: {line}"));
        let sidecar = Sidecar::new(options, log);
        let stop = sidecar.stop_handle();
        let client = client.clone();
        let thread = std::thread::spawn(move || sidecar.run(&client));
        Running { stop, thread }
    }

    fn stop(self) -> Report {
        self.stop.stop();
        self.thread.join().expect("the sidecar thread ends")
    }
}

/// Registers `agent` as the town's mayor.
fn register(client: &Client, agent: &AgentRef) {
    let _: Value = client
        .put_json(&agent.path(""), &json!({"role": "mayor"}), None)
        .expect("registered");
}

fn a_container(town: &str, container: &str) -> Client {
    let client = client(town);
    town::heartbeat(&client, town, container, None).expect("heartbeat");
    client
}

#[test]
#[ignore = "needs a stasis server (STASIS_URL, STASIS_SECRET); scripts/test runs it"]
fn a_turns_end_leaves_a_snapshot_whose_watermark_covers_it() {
    let town = fresh_town("idle-watermark");
    let dir = tempfile::tempdir().expect("dir");
    kilo_db(&dir.path().join("kilo.db"), "the turn's work");
    let kilo = FakeKilo::start();
    let client = a_container(&town, "c-1");
    let agent = AgentRef::new(&town, "hq", "mayor").expect("agent");
    register(&client, &agent);
    let sidecar = Running::start(&client, &agent, &kilo, "c-1", dir.path());

    // A periodic push stores the database before the turn's end is even read.
    wait_for("a first snapshot", Duration::from_secs(30), || {
        snapshot_watermark(&client, &agent)
    });
    wait_for("the event stream", Duration::from_secs(10), || {
        kilo.emit("session.idle", json!({"sessionID": "ses_1"}))
            .then_some(())
    });
    let idle_seq = wait_for("session.idle stored", Duration::from_secs(20), || {
        events(&client, &agent, "&type=session.idle")
            .first()
            .and_then(|e| e["seq"].as_u64())
    });
    // The database did not change since: the same bytes are stored again, newer watermark.
    wait_for(
        "a snapshot whose watermark covers session.idle",
        Duration::from_secs(20),
        || snapshot_watermark(&client, &agent).filter(|w| *w >= idle_seq),
    );
    sidecar.stop();
}

#[test]
#[ignore = "needs a stasis server (STASIS_URL, STASIS_SECRET); scripts/test runs it"]
fn a_restarted_sidecar_stores_nothing_again_that_the_log_holds() {
    let town = fresh_town("resync-dedupe");
    let dir = tempfile::tempdir().expect("dir");
    kilo_db(&dir.path().join("kilo.db"), "x");
    let kilo = FakeKilo::start();
    let now = now_ms();
    // A reply cut off in the runtime's database: every resync reads it back.
    kilo.set_session(
        "ses_1",
        now,
        json!([
            {"info": {"id": "u1", "sessionID": "ses_1", "role": "user", "time": {"created": now}},
             "parts": [{"id": "u1p", "messageID": "u1", "type": "text", "text": "Count"}]},
            {"info": {"id": "a1", "sessionID": "ses_1", "role": "assistant", "time": {"created": now}},
             "parts": [{"id": "t1", "messageID": "a1", "type": "tool", "tool": "bash",
                        "callID": "c1", "state": {"status": "completed", "input": {"command": "ls"}}},
                       {"id": "x1", "messageID": "a1", "type": "text", "text": "", "time": {"start": now}}]}
        ]),
    );
    let agent = AgentRef::new(&town, "hq", "mayor").expect("agent");
    let resyncs = |client: &Client| events(client, &agent, "&type=stasis.sidecar.resync");
    let copies = |client: &Client, kind: &str, field: &str, id: &str| {
        events(client, &agent, &format!("&type={kind}"))
            .iter()
            .filter(|e| e["data"][field]["id"] == json!(id))
            .count()
    };

    let first = a_container(&town, "c-1");
    register(&first, &agent);
    let sidecar = Running::start(&first, &agent, &kilo, "c-1", dir.path());
    wait_for("the first resync", Duration::from_secs(30), || {
        (!resyncs(&first).is_empty() && copies(&first, "message.part.updated", "part", "t1") == 1)
            .then_some(())
    });
    sidecar.stop();

    // Another container's sidecar, with a state of its own, reads the same messages back.
    let second = a_container(&town, "c-2");
    kilo_db(&dir.path().join("b/kilo.db"), "x");
    let sidecar = Running::start(&second, &agent, &kilo, "c-2", &dir.path().join("b"));
    let notes = wait_for("the second resync", Duration::from_secs(30), || {
        let notes = resyncs(&second);
        (notes.len() >= 2).then_some(notes)
    });
    sidecar.stop();
    assert_eq!(copies(&second, "message.updated", "info", "a1"), 1);
    assert_eq!(copies(&second, "message.part.updated", "part", "t1"), 1);
    let note = &notes[1]["data"];
    assert_eq!(
        (note["messages"].clone(), note["parts"].clone()),
        (json!(0), json!(0)),
        "{note}"
    );
    assert!(note["already_stored"].as_u64() >= Some(2), "{note}");
}

/// Appends `events` to `agent`'s log; returns the last seq.
fn append(client: &Client, agent: &AgentRef, events: Value) -> u64 {
    let answer: Value = client
        .post_json(&agent.path("/events"), &json!({ "events": events }), None)
        .expect("appended");
    answer["last_seq"].as_u64().expect("a seq")
}

/// A user's message and a whole reply, in the shapes stasis itself stores.
fn whole_turn(id: &str) -> Value {
    let message = |mid: String, role: &str, text: &str| {
        json!({"type": "message.completed", "session_id": "ses_1",
               "data": {"info": {"id": mid, "role": role}, "part": {"id": format!("{mid}-p"), "text": text}}})
    };
    json!([
        message(format!("{id}-u"), "user", "Do the work"),
        message(format!("{id}-a"), "assistant", "Done."),
    ])
}

#[test]
#[ignore = "needs a stasis server (STASIS_URL, STASIS_SECRET); scripts/test runs it"]
fn after_a_clean_drain_boot_requests_only_the_dispatches_agents_need() {
    let town = fresh_town("clean-drain");
    let dir = tempfile::tempdir().expect("dir");
    let old = a_container(&town, "c-1");
    let names = [
        ("hq", "mayor", "mayor"),
        ("rig-1", "p1", "polecat"),
        ("rig-1", "p2", "polecat"),
    ];
    let mut registry = Vec::new();
    for (rig, id, role) in names {
        let agent = AgentRef::new(&town, rig, id).expect("agent");
        let _: Value = old
            .put_json(&agent.path(""), &json!({ "role": role }), None)
            .expect("registered");
        let mut seq = append(&old, &agent, whole_turn(id));
        if id == "p2" {
            // A reply cut off before the drain's snapshot: the snapshot covers it, yet the
            // agent has work left.
            seq = append(
                &old,
                &agent,
                json!([{"type": "message.part.delta", "session_id": "ses_1",
                        "data": {"messageID": "p2-cut", "partID": "x", "field": "text", "delta": "Half"}}]),
            );
        }
        let db = dir.path().join(format!("old/{id}/kilo.db"));
        kilo_db(&db, id);
        let options = PushOptions {
            event_seq: Some(seq),
            ..PushOptions::default()
        };
        snapshot::push(&old, &agent, &db, &options).expect("the drain's snapshot");
        registry.push(town::RegisteredAgent {
            agent_id: id.into(),
            rig_id: rig.into(),
            role: role.into(),
            session_id: Some("ses_1".into()),
            port: Some(4096),
        });
    }
    town::put_registry(&old, &town, "c-1", &registry, None).expect("registry");
    // A message for p1 after its last snapshot (the inbox): its kilo.db never saw it.
    let p1 = AgentRef::new(&town, "rig-1", "p1").expect("agent");
    let _: Value = old
        .post_json(&p1.path("/inbox"), &json!({"text": "One more thing"}), None)
        .expect("inbox");
    town::evict(&old, &town, "c-1", "sigterm", None).expect("eviction");

    let new = client(&town);
    let options = BootOptions {
        container_id: "c-2".into(),
        root: dir.path().join("new"),
        progress: false,
        chunk_cache: None,
    };
    let report = boot::boot(&new, &town, &options, &mut |_| {}).expect("boot");
    assert!(report.cleared_drain);
    let requested: Vec<&str> = report
        .requested_dispatches
        .iter()
        .map(|r| r.agent.agent_id.as_str())
        .collect();
    let not_needed: Vec<&str> = report
        .not_needed
        .iter()
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(requested, ["p1", "p2"], "{report:?}");
    assert_eq!(not_needed, ["mayor"]);
    assert!(report.complete(), "{report:?}");
    let hydrated = dir
        .path()
        .join("new/agent-home-mayor/.local/share/kilo/kilo.db");
    assert!(hydrated.is_file(), "{}", PathBuf::from(&hydrated).display());
}
