//! The container client (`stasis-client`) against a real `stasis serve`, the way a container
//! uses it: snapshots pushed from a live SQLite database while another process writes to it and
//! pulled back verified, `boot` after an eviction, `drain` within a budget, and the CLI binary.
//!
//! It guards against the client and the server drifting apart: the client's own tests run
//! against a mock written from the contract, and only a real server shows that both read
//! docs/http-api.md the same way (error codes, headers, the town's answers).
//!
//! The writer is this same test binary re-run with `STASIS_E2E_WRITER_DB` set, so that it holds
//! its own SQLite connection and file locks in another process, as kilo does. The helpers are
//! in client_e2e/.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod client_e2e;
mod support;

use std::ops::ControlFlow;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use client_e2e::{
    BATCH, SEED_ROWS, WRITER_ENV, Writer, admin_token, append_rows, assert_consistent_prefix, call,
    client, create_db, entries, head_snapshot, impatient_client, max_id, rows_for, sha256_file,
    start_server, write_until_stopped,
};
use rusqlite::Connection;
use serde_json::{Value, json};
use stasis_client::backup::BackupOptions;
use stasis_client::boot::{BootOptions, Hydration, boot, kilo_db_path};
use stasis_client::drain::{DrainOptions, Flush, drain};
use stasis_client::snapshot::{self, PullOptions, PullOutcome, PushOptions, PushReceipt};
use stasis_client::tail::{TailOptions, tail};
use stasis_client::town::{self, RegisteredAgent};
use stasis_client::{AgentRef, exit};
use support::Server;

/// Not a test of its own: the writer process, active only when re-run by the tests below.
#[test]
fn writer_process() {
    if let Ok(path) = std::env::var(WRITER_ENV) {
        write_until_stopped(Path::new(&path));
    }
}

// ---------------------------------------------------------------------------------------------
// A town: container A's agents, pushed, then evicted
// ---------------------------------------------------------------------------------------------

/// One agent of the test town.
struct Member {
    agent_id: &'static str,
    rig_id: &'static str,
    role: &'static str,
    session_id: &'static str,
    /// Its kilo.db size in container A (`None`: it never wrote one).
    db_bytes: Option<u64>,
}

const MEMBERS: [Member; 4] = [
    Member {
        agent_id: "mayor",
        rig_id: "hq",
        role: "mayor",
        session_id: "ses-mayor",
        db_bytes: Some(3_000_000),
    },
    Member {
        agent_id: "polecat-1",
        rig_id: "main",
        role: "polecat",
        session_id: "ses-p1",
        db_bytes: Some(1_500_000),
    },
    Member {
        agent_id: "polecat-2",
        rig_id: "main",
        role: "polecat",
        session_id: "ses-p2",
        db_bytes: Some(100_000),
    },
    Member {
        agent_id: "refinery",
        rig_id: "main",
        role: "refinery",
        session_id: "ses-r",
        db_bytes: None,
    },
];

/// What container A left behind.
struct Town {
    name: &'static str,
    container_a: String,
    /// One receipt per member with a kilo.db, in `MEMBERS` order (`None` for the others).
    receipts: Vec<Option<PushReceipt>>,
    checkpoint: Value,
}

impl Town {
    fn agent(&self, member: &Member) -> AgentRef {
        AgentRef::new(self.name, member.rig_id, member.agent_id).expect("ids")
    }
}

/// Container A: heartbeat, agent records, registry, the Mayor's chat and checkpoint, and a
/// kilo.db per member pushed from A's agent homes under `root_a`.
fn container_a_runs(server: &Server, name: &'static str, root_a: &Path) -> Town {
    let client = client(server);
    let container_a = town::new_container_id();
    town::heartbeat(&client, name, &container_a, None).expect("A's heartbeat");
    let mut registered = Vec::new();
    for member in &MEMBERS {
        let path = format!(
            "/api/towns/{name}/rigs/{}/agents/{}",
            member.rig_id, member.agent_id
        );
        let (status, _) = call(server, "PUT", &path, Some(&json!({"role": member.role})));
        assert_eq!(status, 201, "registering {}", member.agent_id);
        registered.push(RegisteredAgent {
            agent_id: member.agent_id.into(),
            rig_id: member.rig_id.into(),
            role: member.role.into(),
            session_id: Some(member.session_id.into()),
            port: Some(4100),
        });
    }
    let registry =
        town::put_registry(&client, name, &container_a, &registered, None).expect("A's registry");
    assert_eq!(registry.container_id.as_deref(), Some(container_a.as_str()));
    assert_eq!(registry.agents, registered);

    let mayor = format!("/api/towns/{name}/rigs/hq/agents/mayor");
    let chat = json!({"events": [
        {"type": "message.completed", "session_id": "ses-mayor",
         "data": {"info": {"id": "u1", "role": "user"}, "part": {"id": "u1p", "text": "plan the release"}}},
        {"type": "message.completed", "session_id": "ses-mayor",
         "data": {"info": {"id": "a1", "role": "assistant"}, "part": {"id": "a1p", "text": "three polecats, one refinery"}}},
    ]});
    let (status, _) = call(server, "POST", &format!("{mayor}/events"), Some(&chat));
    assert_eq!(status, 200);
    let checkpoint = json!({"step": 3, "plan": "three polecats, one refinery"});
    let (status, _) = call(
        server,
        "PUT",
        &format!("{mayor}/checkpoint"),
        Some(&checkpoint),
    );
    assert_eq!(status, 200);

    let mut town = Town {
        name,
        container_a,
        receipts: Vec::new(),
        checkpoint,
    };
    for member in &MEMBERS {
        let receipt = member.db_bytes.map(|bytes| {
            let live = kilo_db_path(root_a, member.agent_id);
            create_db(&live, rows_for(bytes), "wal");
            let receipt =
                snapshot::push(&client, &town.agent(member), &live, &PushOptions::default())
                    .expect("A pushes its kilo.db");
            let storage = if bytes > 1_048_576 { "kv" } else { "inline" };
            assert_eq!(
                receipt.storage.as_deref(),
                Some(storage),
                "{}",
                member.agent_id
            );
            receipt
        });
        town.receipts.push(receipt);
    }
    town
}

/// A's SIGTERM: the eviction, then the user messages the Mayor during the gap.
fn container_a_is_evicted(server: &Server, town: &Town, gap_message: &str) {
    let client = client(server);
    town::evict(&client, town.name, &town.container_a, "sigterm", None).expect("eviction");
    let (status, answer) = call(
        server,
        "POST",
        &format!("/api/towns/{}/mayor/message", town.name),
        Some(&json!({"text": gap_message})),
    );
    assert_eq!((status, answer), (202, json!({"action": "deferred"})));
    let late = town::heartbeat(&client, town.name, &town.container_a, None).expect("late beat");
    assert!(
        late.draining && !late.cleared_drain,
        "a late heartbeat does not end the drain"
    );
    assert!(late.pending_dispatches.is_empty());
}

// ---------------------------------------------------------------------------------------------
// a. push while another process writes, pull back verified
// ---------------------------------------------------------------------------------------------

#[test]
fn a_live_database_pushed_while_another_process_writes_pulls_back_as_a_consistent_prefix() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let live = work
        .path()
        .join("agent-home-mayor/.local/share/kilo/kilo.db");
    create_db(&live, SEED_ROWS, "wal");
    assert!(std::fs::metadata(&live).expect("size").len() > 4_000_000);

    let writer = Writer::start(&live);
    let reader = Connection::open(&live).expect("reader");
    writer.wait_for(&reader, SEED_ROWS, 20);
    let before = max_id(&reader);
    let mayor = AgentRef::new("e2e-a", "hq", "mayor").expect("ids");
    // Small backup steps with pauses: the copy spans many of the writer's commits.
    let options = PushOptions {
        backup: BackupOptions {
            pages_per_step: 64,
            pause_between_steps: Duration::from_millis(2),
            ..BackupOptions::default()
        },
        ..PushOptions::default()
    };
    let receipt = snapshot::push(&client(&server), &mayor, &live, &options)
        .expect("push while the writer writes");
    let after_push = max_id(&reader);
    // The writer was not stopped by the copy: it carries on past it.
    writer.wait_for(&reader, after_push, 20);

    let out = work.path().join("restored/kilo.db");
    let pulled = match snapshot::pull(&client(&server), &mayor, &out, &PullOptions::default()) {
        Ok(PullOutcome::Pulled(pulled)) => pulled,
        other => panic!("expected the snapshot, got {other:?}"),
    };
    let after = max_id(&reader);
    assert!(writer.stop(), "the writer ran without error");

    assert_eq!(receipt.storage.as_deref(), Some("kv"));
    assert_eq!((pulled.version, pulled.size), (Some(1), receipt.size));
    let copied = assert_consistent_prefix(&out);
    assert!(
        after_push > before,
        "the writer committed while the push ran"
    );
    assert!(
        before <= copied && copied < after,
        "{before} <= {copied} < {after}"
    );
    assert_eq!(
        (copied - SEED_ROWS) % BATCH,
        0,
        "the copy ends on a transaction"
    );
    let (status, server_sha) = head_snapshot(&server, &mayor);
    assert_eq!(status, 200);
    let file_sha = sha256_file(&out);
    assert_eq!(server_sha.as_deref(), Some(file_sha.as_str()));
    assert_eq!(
        (pulled.sha256.as_str(), receipt.sha256.as_str()),
        (file_sha.as_str(), file_sha.as_str())
    );
    assert_eq!(entries(out.parent().expect("parent")), ["kilo.db"]);
}

#[test]
fn a_pull_that_cannot_complete_leaves_no_partial_file() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let source = work.path().join("source.db");
    create_db(&source, rows_for(1_500_000), "wal");
    let mayor = AgentRef::new("e2e-fail", "hq", "mayor").expect("ids");
    let receipt =
        snapshot::push(&client(&server), &mayor, &source, &PushOptions::default()).expect("push");
    assert_eq!(receipt.storage.as_deref(), Some("kv"));

    // The parent is a file: nothing can be created there.
    let blocker = work.path().join("not-a-dir");
    std::fs::write(&blocker, b"a file").expect("file");
    let error = snapshot::pull(
        &client(&server),
        &mayor,
        &blocker.join("kilo.db"),
        &PullOptions::default(),
    )
    .expect_err("no directory to write in");
    assert_eq!(error.exit_code(), exit::LOCAL, "{error}");
    assert_eq!(std::fs::read(&blocker).expect("read"), b"a file");

    // A read-only directory (meaningless for root, who writes anyway).
    let locked = work.path().join("read-only");
    std::fs::create_dir(&locked).expect("dir");
    set_mode(&locked, 0o555);
    if std::fs::write(locked.join("probe"), b"").is_err() {
        let error = snapshot::pull(
            &client(&server),
            &mayor,
            &locked.join("kilo.db"),
            &PullOptions::default(),
        )
        .expect_err("a read-only directory");
        assert_eq!(error.exit_code(), exit::LOCAL, "{error}");
        assert!(entries(&locked).is_empty());
    }
    set_mode(&locked, 0o755);

    // The stored copy rots: the server refuses to send it, the pull fails after its retries,
    // and the old database is left as it was with nothing beside it.
    let blob = data.path().join("kv/snapshots/e2e-fail/hq/mayor/v1");
    let mut rotten = std::fs::read(&blob).expect("the KV value");
    let middle = rotten.len() / 2;
    rotten[middle] ^= 0xff;
    std::fs::write(&blob, rotten).expect("rot");
    let home = work.path().join("home");
    std::fs::create_dir(&home).expect("dir");
    std::fs::write(home.join("kilo.db"), b"the old database").expect("old");
    let error = snapshot::pull(
        &impatient_client(&server),
        &mayor,
        &home.join("kilo.db"),
        &PullOptions::default(),
    )
    .expect_err("corrupt bytes are never sent");
    assert_ne!(error.exit_code(), exit::OK);
    assert_eq!(error.status(), Some(500), "{error}");
    assert_eq!(
        std::fs::read(home.join("kilo.db")).expect("read"),
        b"the old database"
    );
    assert_eq!(entries(&home), ["kilo.db"]);
}

#[test]
fn a_push_guarded_by_if_match_stores_on_the_current_etag_and_is_refused_on_a_stale_one() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("kilo.db");
    create_db(&db, 50, "wal");
    let mayor = AgentRef::new("e2e-etag", "hq", "mayor").expect("ids");
    let client = client(&server);
    let first = snapshot::push(&client, &mayor, &db, &PushOptions::default()).expect("v1");
    append_rows(&db, 10);
    let guarded = |etag: &str| PushOptions {
        if_match: Some(etag.to_owned()),
        event_seq: Some(7),
        ..PushOptions::default()
    };
    let etag = first.etag.clone().expect("an ETag");
    let second = snapshot::push(&client, &mayor, &db, &guarded(&etag)).expect("v2");
    assert_eq!((second.version, second.event_watermark), (2, Some(7)));
    let error = snapshot::push(&client, &mayor, &db, &guarded(&etag)).expect_err("stale");
    assert_eq!(
        (error.status(), error.code()),
        (Some(412), Some("precondition_failed"))
    );
    assert_eq!(error.exit_code(), exit::REFUSED);
    assert_eq!(
        head_snapshot(&server, &mayor).1.as_deref(),
        Some(second.sha256.as_str())
    );
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

// ---------------------------------------------------------------------------------------------
// b. boot after an eviction
// ---------------------------------------------------------------------------------------------

#[test]
fn boot_hydrates_every_registered_agent_byte_identical_and_hands_over_the_deferred_dispatch() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let (root_a, root_b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let town = container_a_runs(&server, "e2e-boot", root_a.path());
    let gap = "are you still there after the restart?";
    container_a_is_evicted(&server, &town, gap);

    let options = BootOptions {
        container_id: town::new_container_id(),
        root: root_b.path().to_owned(),
        progress: false,
    };
    let mut seen = Vec::new();
    let report = boot(&client(&server), town.name, &options, &mut |outcome| {
        seen.push(outcome.agent.agent_id.clone());
    })
    .expect("boot");

    assert!(report.cleared_drain && !report.draining);
    assert!(report.complete());
    assert_eq!(seen, ["mayor", "polecat-1", "polecat-2", "refinery"]);
    for ((member, outcome), receipt) in MEMBERS.iter().zip(&report.agents).zip(&town.receipts) {
        let path = kilo_db_path(root_b.path(), member.agent_id);
        assert_eq!(outcome.path, path);
        match (&outcome.result, receipt) {
            (Hydration::Pulled(pulled), Some(receipt)) => {
                assert_eq!(
                    sha256_file(&path),
                    receipt.sha256,
                    "{} byte-identical",
                    member.agent_id
                );
                assert_eq!((pulled.version, pulled.size), (Some(1), receipt.size));
                let rows = assert_consistent_prefix(&path);
                assert_eq!(rows, rows_for(member.db_bytes.expect("a db")));
            }
            (Hydration::NoSnapshot, None) => assert!(!path.exists(), "{}", member.agent_id),
            (other, _) => panic!("{}: unexpected {other:?}", member.agent_id),
        }
    }
    assert_eq!(
        hydrated_files(root_b.path()),
        3,
        "exactly the three with a snapshot"
    );

    let [dispatch] = &report.pending_dispatches[..] else {
        panic!("one dispatch, the Mayor's: {:?}", report.pending_dispatches)
    };
    assert_eq!(
        (dispatch["agent_id"].as_str(), dispatch["role"].as_str()),
        (Some("mayor"), Some("mayor"))
    );
    assert_eq!(dispatch["checkpoint"], town.checkpoint);
    let prompt = dispatch["prompt"].as_str().expect("a prompt");
    assert!(
        prompt.contains("plan the release") && prompt.ends_with(gap),
        "{prompt}"
    );
    let mayor_sha = town.receipts[0].as_ref().map(|r| r.sha256.as_str());
    assert_eq!(dispatch["snapshot"]["sha256"].as_str(), mayor_sha);
    let (_, state) = call(&server, "GET", &format!("/api/towns/{}", town.name), None);
    assert_eq!(
        state["current_container_id"].as_str(),
        Some(options.container_id.as_str())
    );
}

/// kilo.db files under a root.
fn hydrated_files(root: &Path) -> usize {
    entries(root)
        .iter()
        .filter(|home| kilo_db_path(root, home.trim_start_matches("agent-home-")).is_file())
        .count()
}

// ---------------------------------------------------------------------------------------------
// c. drain within a budget
// ---------------------------------------------------------------------------------------------

#[test]
fn drain_records_the_eviction_and_flushes_every_agents_newer_kilo_db() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let (root_a, root_b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let town = container_a_runs(&server, "e2e-drain", root_a.path());
    container_a_is_evicted(&server, &town, "hello again");
    let container_b = town::new_container_id();
    let options = BootOptions {
        container_id: container_b.clone(),
        root: root_b.path().to_owned(),
        progress: false,
    };
    boot(&client(&server), town.name, &options, &mut |_| {}).expect("B boots");

    // B's agents work: each kilo.db grows, and the refinery writes its first one. B never
    // registered its own registry: the one it booted from (A's) names its agents.
    for member in &MEMBERS[..3] {
        append_rows(&kilo_db_path(root_b.path(), member.agent_id), 25);
    }
    create_db(&kilo_db_path(root_b.path(), "refinery"), 40, "wal");

    let drained = DrainOptions {
        container_id: container_b.clone(),
        root: root_b.path().to_owned(),
        budget: Duration::from_secs(120),
        reason: "sigterm".into(),
        parallel: 2,
    };
    let report = drain(&client(&server), town.name, &drained, &|_| {}).expect("drain");

    assert!(report.complete(), "{report:?}");
    let (_, state) = call(&server, "GET", &format!("/api/towns/{}", town.name), None);
    assert_eq!(state["draining"], json!(true));
    assert_eq!(
        state["evicting_container_id"].as_str(),
        Some(container_b.as_str())
    );
    let order: Vec<&str> = report
        .agents
        .iter()
        .map(|a| a.agent.agent_id.as_str())
        .collect();
    assert_eq!(order, ["mayor", "polecat-1", "polecat-2", "refinery"]);
    for (outcome, before) in report.agents.iter().zip(&town.receipts) {
        let Flush::Flushed(receipt) = &outcome.result else {
            panic!(
                "{} not flushed: {:?}",
                outcome.agent.agent_id, outcome.result
            )
        };
        let expected_version = before.as_ref().map_or(1, |r| r.version + 1);
        assert_eq!(
            receipt.version, expected_version,
            "{}",
            outcome.agent.agent_id
        );
        let who =
            AgentRef::new(town.name, &outcome.agent.rig_id, &outcome.agent.agent_id).expect("ids");
        let (_, server_sha) = head_snapshot(&server, &who);
        assert_eq!(server_sha.as_deref(), Some(receipt.sha256.as_str()));
        let back = root_a
            .path()
            .join(format!("check-{}.db", outcome.agent.agent_id));
        snapshot::pull(&client(&server), &who, &back, &PullOptions::default()).expect("pull");
        let local = Connection::open(&outcome.path).expect("local");
        assert_eq!(assert_consistent_prefix(&back), max_id(&local));
    }
}

#[test]
fn a_drain_reports_out_of_time_for_what_its_budget_could_not_flush() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let root = tempfile::tempdir().expect("root");
    let client = client(&server);
    let name = "e2e-budget";
    let container = town::new_container_id();
    town::heartbeat(&client, name, &container, None).expect("heartbeat");
    let agents: Vec<RegisteredAgent> = [("mayor", "mayor"), ("polecat-1", "polecat")]
        .into_iter()
        .map(|(id, role)| RegisteredAgent {
            agent_id: id.into(),
            rig_id: "main".into(),
            role: role.into(),
            session_id: None,
            port: None,
        })
        .collect();
    town::put_registry(&client, name, &container, &agents, None).expect("registry");
    // The Mayor's database is locked by a writer that never lets go within the budget.
    let mayor_db = kilo_db_path(root.path(), "mayor");
    create_db(&mayor_db, 200, "delete");
    create_db(&kilo_db_path(root.path(), "polecat-1"), 200, "wal");
    let holder = Connection::open(&mayor_db).expect("holder");
    holder
        .execute_batch("BEGIN EXCLUSIVE")
        .expect("exclusive lock");

    let budget = Duration::from_secs(3);
    let options = DrainOptions {
        container_id: container.clone(),
        root: root.path().to_owned(),
        budget,
        reason: "sigterm".into(),
        parallel: 2,
    };
    let started = Instant::now();
    let report = drain(&client, name, &options, &|_| {}).expect("drain");
    let took = started.elapsed();
    holder.execute_batch("ROLLBACK").expect("release");

    assert!(
        took < budget + Duration::from_secs(3),
        "the budget bounds the drain: {took:?}"
    );
    assert!(!report.complete());
    assert!(report.eviction_error.is_none());
    assert!(
        matches!(report.agents[0].result, Flush::OutOfTime),
        "{:?}",
        report.agents[0]
    );
    assert!(
        matches!(report.agents[1].result, Flush::Flushed(_)),
        "{:?}",
        report.agents[1]
    );
    let mayor = AgentRef::new(name, "main", "mayor").expect("ids");
    assert_eq!(head_snapshot(&server, &mayor).0, 404, "nothing half-stored");
    let (_, state) = call(&server, "GET", &format!("/api/towns/{name}"), None);
    assert_eq!(state["draining"], json!(true));
}

// ---------------------------------------------------------------------------------------------
// tail
// ---------------------------------------------------------------------------------------------

#[test]
fn tail_delivers_the_backlog_then_live_events_in_seq_order() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let events = "/api/towns/e2e-tail/rigs/hq/agents/mayor/events";
    let post = |texts: &[&str]| {
        let batch: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "note", "session_id": "s1", "data": {"text": t}}))
            .collect();
        let (status, _) = call(&server, "POST", events, Some(&json!({"events": batch})));
        assert_eq!(status, 200);
    };
    post(&["one", "two", "three"]);
    let mayor = AgentRef::new("e2e-tail", "hq", "mayor").expect("ids");
    let (sender, received) = std::sync::mpsc::channel();
    let follower = {
        let client = client(&server);
        std::thread::spawn(move || {
            let options = TailOptions {
                after: 1,
                session_id: Some("s1".into()),
                ..TailOptions::default()
            };
            tail(&client, &mayor, &options, &mut |event| {
                let value: Value = serde_json::from_str(&event.json).expect("event JSON");
                assert_eq!(value["seq"].as_u64(), event.seq);
                let _ = sender.send(value);
                if event.seq == Some(5) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
        })
    };
    let wait = Duration::from_secs(30);
    let backlog: Vec<Value> = (0..2)
        .map(|_| received.recv_timeout(wait).expect("backlog"))
        .collect();
    post(&["four", "five"]);
    let live: Vec<Value> = (0..2)
        .map(|_| received.recv_timeout(wait).expect("live"))
        .collect();
    follower
        .join()
        .expect("the follower")
        .expect("tail ends when asked");
    let texts: Vec<&str> = backlog
        .iter()
        .chain(&live)
        .map(|e| e["data"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(texts, ["two", "three", "four", "five"]);
}

// ---------------------------------------------------------------------------------------------
// d. the binary
// ---------------------------------------------------------------------------------------------

/// Runs the `stasis-client` binary through cargo (the host package cannot name another
/// package's binary), built without TLS: the server is plain http on loopback.
fn stasis_client_cli(server: &Server, token: &str, args: &[&str]) -> Output {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace");
    let mut command = Command::new(env!("CARGO"));
    command.current_dir(workspace).args([
        "run",
        "-q",
        "--locked",
        "-p",
        "stasis-client",
        "--no-default-features",
    ]);
    if !cfg!(debug_assertions) {
        command.arg("--release");
    }
    command
        .arg("--")
        .args(args)
        .env("STASIS_URL", &server.base)
        .env("STASIS_TOKEN", token)
        .output()
        .expect("cargo runs stasis-client")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_cli_pushes_and_pulls_against_the_real_server_and_fails_clearly_on_a_refusal() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let work = tempfile::tempdir().expect("temp dir");
    let db = work.path().join("kilo.db");
    create_db(&db, 300, "wal");
    let db = db.to_str().expect("utf-8 path");
    let agent_args = ["--town", "e2e-cli", "--rig", "hq", "--agent", "mayor"];
    let token = admin_token();

    let push = [
        &["snapshot", "push"][..],
        &agent_args,
        &["--db", db, "--event-seq", "0"],
    ]
    .concat();
    let output = stasis_client_cli(&server, &token, &push);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let receipt: Value = serde_json::from_slice(&output.stdout).expect("a JSON receipt");
    assert_eq!(
        (receipt["version"].as_u64(), receipt["storage"].as_str()),
        (Some(1), Some("inline"))
    );

    let out = work.path().join("pulled/kilo.db");
    let out_arg = out.to_str().expect("utf-8 path");
    let pull = [&["snapshot", "pull"][..], &agent_args, &["--out", out_arg]].concat();
    let output = stasis_client_cli(&server, &token, &pull);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let pulled: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(pulled["sha256"], receipt["sha256"]);
    assert_eq!(Some(sha256_file(&out).as_str()), receipt["sha256"].as_str());
    assert_eq!(assert_consistent_prefix(&out), 300);

    let missing = [
        "snapshot", "pull", "--town", "e2e-cli", "--rig", "hq", "--agent", "nobody", "--out",
        out_arg,
    ];
    let output = stasis_client_cli(&server, &token, &missing);
    assert_eq!(
        output.status.code(),
        Some(i32::from(exit::NO_SNAPSHOT)),
        "{}",
        text(&output.stderr)
    );
    assert!(output.stdout.is_empty());

    let forged = format!("stasis_v1.admin.{}", "0".repeat(64));
    let output = stasis_client_cli(&server, &forged, &push);
    assert_eq!(output.status.code(), Some(i32::from(exit::REFUSED)));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("401 unauthorized"),
        "a clear message: {stderr}"
    );
    assert!(
        !stderr.contains("retrying"),
        "a refusal is not retried: {stderr}"
    );
}
