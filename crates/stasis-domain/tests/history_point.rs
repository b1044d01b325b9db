//! The point resolver: a seq, a time or a version resolves to the version
//! each kind (kilo.db, checkpoint, every memory key) had then.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test fails loudly, naming what broke"
)]

use stasis_domain::{
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    agent_state::StateCall,
    event_log::{AppendBatch, NewEvent},
    history::{
        Kind, RetentionPolicy,
        point::{self, Point, PointBody, StateAt},
    },
    limits,
    snapshot::SnapshotCall,
};
use stasis_sqlite::SqliteStore;

const BASE: i64 = 1_700_000_000_000;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("sqlite");
    agent::migrate(&store).expect("schema");
    store
}

fn call(store: &SqliteStore, at: i64, call: AgentCall) -> AgentReply {
    let env = ObjectEnv {
        now_ms: BASE + at,
        max_events: limits::DEFAULT_MAX_EVENTS,
        retention: RetentionPolicy::default(),
    };
    let text = format!("{call:?}");
    agent::execute(store, &call, &env).unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

fn event(store: &SqliteStore, at: i64) {
    let batch = AppendBatch::new(vec![NewEvent::new("message.created", None, "{}")]);
    call(store, at, AgentCall::AppendEvents(batch));
}

fn state(store: &SqliteStore, at: i64, call: StateCall) {
    self::call(store, at, AgentCall::State(call));
}

fn kilo_db(store: &SqliteStore, at: i64, bytes: &[u8]) {
    kilo_db_covering(store, at, bytes, None);
}

/// A kilo.db version whose pusher says it covers the log up to `watermark`.
fn kilo_db_covering(store: &SqliteStore, at: i64, bytes: &[u8], watermark: Option<u64>) {
    let commit = SnapshotCall::Commit {
        version: 0,
        sha256: stasis_domain::chunk_store::sha256_hex(bytes),
        size: bytes.len() as u64,
        precondition: None,
        event_watermark: watermark,
        inline: Some(bytes.to_vec()),
        kv_key: None,
        grace_ms: 0,
    };
    call(store, at, AgentCall::Snapshot(commit));
}

fn checkpoint(step: u32) -> StateCall {
    StateCall::PutCheckpoint {
        document: format!(r#"{{"step":{step}}}"#),
    }
}

fn memory(value: &str) -> StateCall {
    StateCall::PutMemory {
        key: "k".into(),
        value: value.into(),
    }
}

/// seq 1: checkpoint v1, memory k v1, kilo.db v1 (at 1 s);
/// seq 2: checkpoint v2 (at 2 s);
/// seq 3: memory k deleted (v2), kilo.db v2 (at 3 s);
/// seq 4: memory k v3, memory j v4 (at 4 s).
fn story() -> SqliteStore {
    let store = store();
    event(&store, 1_000);
    state(&store, 1_000, checkpoint(1));
    state(&store, 1_000, memory("1"));
    kilo_db(&store, 1_000, b"first");
    event(&store, 2_000);
    state(&store, 2_000, checkpoint(2));
    event(&store, 3_000);
    state(&store, 3_000, StateCall::DeleteMemory { key: "k".into() });
    kilo_db(&store, 3_000, b"second");
    event(&store, 4_000);
    state(&store, 4_000, memory("3"));
    let put_j = StateCall::PutMemory {
        key: "j".into(),
        value: "\"j\"".into(),
    };
    state(&store, 4_000, put_j);
    store
}

fn resolve(store: &SqliteStore, point: Point) -> StateAt {
    point::resolve(store, &point).unwrap_or_else(|err| panic!("{point:?}: {err:?}"))
}

/// (kilo.db, checkpoint, memory keys with their versions)
type Shape = (Option<u64>, Option<u64>, Vec<(String, u64)>);

fn shape(state: &StateAt) -> Shape {
    (
        state.db_snapshot.map(|v| v.version),
        state.checkpoint.map(|v| v.version),
        state
            .memory
            .iter()
            .map(|(k, v)| (k.clone(), v.version))
            .collect(),
    )
}

fn k(version: u64) -> Vec<(String, u64)> {
    vec![("k".into(), version)]
}

#[test]
fn a_seq_resolves_each_kind_to_its_newest_version_by_then() {
    let store = story();
    assert_eq!(shape(&resolve(&store, Point::Seq(0))), (None, None, vec![]));
    assert_eq!(
        shape(&resolve(&store, Point::Seq(1))),
        (Some(1), Some(1), k(1))
    );
    assert_eq!(
        shape(&resolve(&store, Point::Seq(2))),
        (Some(1), Some(2), k(1))
    );
    // The deletion of k at seq 3: k is absent there.
    assert_eq!(
        shape(&resolve(&store, Point::Seq(3))),
        (Some(2), Some(2), vec![])
    );
    let now = resolve(&store, Point::Seq(4));
    assert_eq!(
        shape(&now),
        (Some(2), Some(2), vec![("j".into(), 4), ("k".into(), 3)])
    );
    assert!(now.checkpoint.is_some_and(|v| v.current));
    assert_eq!(now.seq, 4);
    let past = resolve(&store, Point::Seq(1));
    assert!(past.checkpoint.is_some_and(|v| !v.current && v.seq == 1));
}

#[test]
fn a_version_whose_watermark_lags_resolves_at_the_seq_it_was_written() {
    // A sidecar that just started pushes with watermark 0: its bytes are the runtime's state
    // now, so a point before now must not resolve to them, current or superseded.
    let store = story();
    let kilo_at = |seq| {
        resolve(&store, Point::Seq(seq))
            .db_snapshot
            .map(|v| v.version)
    };
    kilo_db_covering(&store, 5_000, b"third", Some(0));
    assert_eq!(kilo_at(3), Some(2));
    assert_eq!(kilo_at(4), Some(3));
    event(&store, 6_000);
    kilo_db_covering(&store, 6_000, b"fourth", Some(0));
    assert_eq!(
        kilo_at(2),
        Some(1),
        "the superseded third version keeps its seq, 4"
    );
    assert_eq!(kilo_at(4), Some(3));
    assert_eq!(kilo_at(5), Some(4));
}

#[test]
fn a_time_resolves_by_when_versions_were_written_and_finds_its_seq() {
    let store = story();
    let at = |ms: i64| resolve(&store, Point::At(BASE + ms));
    assert_eq!(shape(&at(999)), (None, None, vec![]));
    assert_eq!(at(999).seq, 0);
    assert_eq!(shape(&at(1_000)), (Some(1), Some(1), k(1)));
    assert_eq!(shape(&at(2_500)), (Some(1), Some(2), k(1)));
    assert_eq!(at(2_500).seq, 2);
    assert_eq!(shape(&at(3_999)), (Some(2), Some(2), vec![]));
    assert_eq!(at(60_000).seq, 4);
}

#[test]
fn a_version_resolves_as_its_seq_with_that_version_itself() {
    let store = story();
    let checkpoint_one = Point::Version {
        kind: Kind::Checkpoint,
        key: None,
        version: 1,
    };
    assert_eq!(
        shape(&resolve(&store, checkpoint_one)),
        (Some(1), Some(1), k(1))
    );
    let k_deleted = Point::Version {
        kind: Kind::Memory,
        key: Some("k".into()),
        version: 2,
    };
    let state = resolve(&store, k_deleted);
    assert_eq!(state.seq, 3);
    assert_eq!(shape(&state), (Some(2), Some(2), vec![]));
    let kilo_two = Point::Version {
        kind: Kind::DbSnapshot,
        key: None,
        version: 2,
    };
    assert!(
        resolve(&store, kilo_two)
            .db_snapshot
            .is_some_and(|v| v.current)
    );
}

#[test]
fn bad_points_are_refused() {
    let store = story();
    let code = |point: Point| {
        point::resolve(&store, &point)
            .expect_err("refused")
            .code()
            .to_owned()
    };
    assert_eq!(code(Point::Seq(5)), "invalid_request");
    let unknown = Point::Version {
        kind: Kind::Checkpoint,
        key: None,
        version: 99,
    };
    assert_eq!(code(unknown), "version_not_found");
    let other_key = Point::Version {
        kind: Kind::Memory,
        key: Some("j".into()),
        version: 1,
    };
    assert_eq!(code(other_key), "version_not_found");
    let body = |text: &str| {
        serde_json::from_str::<PointBody>(text)
            .map_err(|_| "unreadable".to_owned())
            .and_then(|body| Point::try_from(body).map_err(|e| e.code().to_owned()))
    };
    assert_eq!(body(r#"{"seq":3}"#), Ok(Point::Seq(3)));
    assert_eq!(body(r#"{"seq":3,"at":5}"#), Err("invalid_request".into()));
    assert_eq!(body(r#"{}"#), Err("invalid_request".into()));
    assert_eq!(body(r#"{"version":3}"#), Err("invalid_request".into()));
    assert_eq!(body(r#"{"at":-1}"#), Err("invalid_request".into()));
    assert_eq!(
        body(r#"{"kind":"checkpoint","version":1,"key":"k"}"#),
        Err("invalid_request".into())
    );
    assert_eq!(body(r#"{"sequence":3}"#), Err("unreadable".into()));
}
