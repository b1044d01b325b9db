//! Restore in place over real SQLite: every kind back to a point, the
//! undo back to before, the conversation continuing from the point.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test fails loudly, naming what broke"
)]

use stasis_domain::{
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    agent_state::{StateCall, StateReply},
    conversation::Budget,
    event_log::{AppendBatch, NewEvent},
    history::{Point, RetentionPolicy},
    limits,
    restore::{RestoreCall, RestoreTo, Restored},
    snapshot::{SnapshotCall, SnapshotReply},
};
use stasis_sqlite::SqliteStore;

const BASE: i64 = 1_700_000_000_000;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("sqlite");
    agent::migrate(&store).expect("schema");
    store
}

fn env(at: i64) -> ObjectEnv {
    ObjectEnv {
        now_ms: BASE + at,
        max_events: limits::DEFAULT_MAX_EVENTS,
        retention: RetentionPolicy::default(),
    }
}

fn call(store: &SqliteStore, at: i64, call: AgentCall) -> AgentReply {
    let text = format!("{call:?}");
    agent::execute(store, &call, &env(at)).unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

fn user_says(store: &SqliteStore, id: &str, text: &str) {
    let data = stasis_domain::recall::user_message_data(id, text);
    let batch = AppendBatch::new(vec![NewEvent::new("message.completed", None, &data)]);
    call(store, 0, AgentCall::AppendEvents(batch));
}

fn state(store: &SqliteStore, state: StateCall) -> StateReply {
    match call(store, 0, AgentCall::State(state)) {
        AgentReply::State(reply) => reply,
        other => panic!("{other:?}"),
    }
}

fn kilo_db(store: &SqliteStore, bytes: &[u8]) {
    let commit = SnapshotCall::Commit {
        version: 0,
        sha256: stasis_domain::chunk_store::sha256_hex(bytes),
        size: bytes.len() as u64,
        precondition: None,
        event_watermark: None,
        inline: Some(bytes.to_vec()),
        kv_key: None,
        grace_ms: 0,
    };
    call(store, 0, AgentCall::Snapshot(commit));
}

/// Everything the export carries of the agent's state, as text.
fn exported(store: &SqliteStore) -> String {
    let head = state(store, StateCall::ExportHead);
    let memory = state(store, StateCall::ExportMemory { after: None });
    let located = SnapshotCall::Locate { with_bytes: true };
    let snapshot = match call(store, 0, AgentCall::Snapshot(located)) {
        AgentReply::Snapshot(SnapshotReply::Located(Some(l))) => {
            format!(
                "{:?} {} {}",
                l.inline, l.meta.sha256, l.meta.event_watermark
            )
        }
        other => format!("{other:?}"),
    };
    let StateReply::ExportHead(head) = head else {
        panic!("{head:?}")
    };
    let checkpoint = head.checkpoint.unwrap_or_default();
    format!("{checkpoint} {memory:?} {snapshot}")
}

fn restore(store: &SqliteStore, to: RestoreTo) -> Result<Restored, String> {
    let call = AgentCall::Restore(RestoreCall {
        to,
        grace_ms: 0,
        fence_epoch: None,
    });
    match agent::execute(store, &call, &env(0)) {
        Ok(AgentReply::Restored(restored)) => Ok(restored),
        Ok(other) => panic!("{other:?}"),
        Err(err) => Err(err.code().to_owned()),
    }
}

fn said(store: &SqliteStore) -> Vec<String> {
    let conversation = AgentCall::Conversation {
        budget: Budget::default(),
        session_id: None,
    };
    match call(store, 0, conversation) {
        AgentReply::Conversation(c) => c.turns.into_iter().map(|t| t.content).collect(),
        other => panic!("{other:?}"),
    }
}

/// seq 1 "one", checkpoint 1, memory a=1, kilo.db "first";
/// seq 2 "two", checkpoint 2, memory a=2 and b=2, kilo.db "second".
fn story() -> SqliteStore {
    let store = store();
    user_says(&store, "m1", "one");
    let put = |document: &str| StateCall::PutCheckpoint {
        document: document.into(),
    };
    let memory = |key: &str, value: &str| StateCall::PutMemory {
        key: key.into(),
        value: value.into(),
    };
    state(&store, put(r#"{"step":1}"#));
    state(&store, memory("a", "1"));
    kilo_db(&store, b"first");
    user_says(&store, "m2", "two");
    state(&store, put(r#"{"step":2}"#));
    state(&store, memory("a", "2"));
    state(&store, memory("b", "2"));
    kilo_db(&store, b"second");
    store
}

#[test]
fn a_restore_brings_every_kind_back_and_its_undo_the_state_before() {
    let store = story();
    let before = exported(&store);
    let restored = restore(&store, RestoreTo::Point(Point::Seq(1))).expect("restored");
    assert_eq!((restored.seq, restored.point_seq), (3, 1));
    assert!(restored.db_snapshot.changed && restored.checkpoint.changed);
    let now = exported(&store);
    assert!(now.contains(r#"{"step":1}"#), "{now}");
    assert!(
        now.contains("first") || now.contains("102, 105, 114, 115, 116"),
        "{now}"
    );
    assert!(!now.contains(r#"key: "b""#), "b was absent at seq 1: {now}");
    assert_eq!(said(&store), ["one"]);
    // After the restore, the conversation goes on from the point.
    user_says(&store, "m3", "three");
    assert_eq!(said(&store), ["one", "three"]);
    let undone = restore(&store, RestoreTo::Pin(restored.undo.pin)).expect("undone");
    assert_eq!(undone.point_seq, 2);
    assert_eq!(exported(&store), before);
    assert_eq!(said(&store), ["one", "two"]);
}

#[test]
fn bad_input_changes_nothing() {
    let store = story();
    let before = exported(&store);
    let events = |store: &SqliteStore| match state(store, StateCall::ExportHead) {
        StateReply::ExportHead(head) => head.last_seq,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        restore(&store, RestoreTo::Point(Point::Seq(9))),
        Err("invalid_request".into())
    );
    let unknown = Point::Version {
        kind: stasis_domain::history::Kind::Checkpoint,
        key: None,
        version: 77,
    };
    assert_eq!(
        restore(&store, RestoreTo::Point(unknown)),
        Err("version_not_found".into())
    );
    assert_eq!(
        restore(&store, RestoreTo::Pin("nope".into())),
        Err("pin_not_found".into())
    );
    assert_eq!(exported(&store), before);
    assert_eq!(events(&store), 2);
}

#[test]
fn an_undo_after_later_writes_still_finds_the_state_before_the_restore() {
    let store = story();
    let before = exported(&store);
    let restored = restore(&store, RestoreTo::Point(Point::Seq(1))).expect("restored");
    // Writes after the restore supersede the restored versions: those are
    // kept at the restore's seq, not at their bytes' older watermark, so the
    // undo pin still resolves to the versions before the restore.
    kilo_db(&store, b"third");
    state(
        &store,
        StateCall::PutCheckpoint {
            document: r#"{"step":3}"#.into(),
        },
    );
    restore(&store, RestoreTo::Pin(restored.undo.pin)).expect("undone");
    assert_eq!(exported(&store), before);
}
