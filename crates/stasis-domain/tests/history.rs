//! History: superseded versions kept, listed and read; retention's tiers
//! and pins.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test fails loudly, naming what broke"
)]

use stasis_domain::{
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    agent_state::{StateCall, StateReply},
    event_log::{AppendBatch, NewEvent},
    history::{HistoryCall, HistoryReply, Kind, RetentionPolicy, VersionInfo},
    limits,
    snapshot::{SnapshotCall, SnapshotReply},
};
use stasis_sqlite::SqliteStore;

const BASE: i64 = 1_700_000_000_000;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("sqlite");
    agent::migrate(&store).expect("schema");
    store
}

fn policy() -> RetentionPolicy {
    RetentionPolicy::parse("10000,1000:100000").expect("policy")
}

fn call(store: &SqliteStore, at: i64, call: AgentCall) -> AgentReply {
    let env = ObjectEnv {
        now_ms: BASE + at,
        max_events: limits::DEFAULT_MAX_EVENTS,
        retention: policy(),
    };
    let text = format!("{call:?}");
    agent::execute(store, &call, &env).unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

fn event(store: &SqliteStore, at: i64) {
    let batch = AppendBatch::new(vec![NewEvent::new("message.created", None, "{}")]);
    call(store, at, AgentCall::AppendEvents(batch));
}

fn checkpoint(store: &SqliteStore, at: i64, step: u32) {
    let document = format!(r#"{{"step":{step}}}"#);
    call(
        store,
        at,
        AgentCall::State(StateCall::PutCheckpoint { document }),
    );
}

fn versions(store: &SqliteStore, kind: Kind, key: Option<&str>) -> Vec<VersionInfo> {
    let list = HistoryCall::List {
        kind,
        key: key.map(str::to_owned),
        after: 0,
        limit: Some(1000),
    };
    match call(store, 0, AgentCall::History(list)) {
        AgentReply::History(HistoryReply::Versions(page)) => page.versions,
        other => panic!("{other:?}"),
    }
}

fn steps(store: &SqliteStore) -> Vec<(u64, bool)> {
    versions(store, Kind::Checkpoint, None)
        .iter()
        .map(|v| (v.seq, v.current))
        .collect()
}

#[test]
fn every_checkpoint_is_kept_listed_and_readable_with_its_seq() {
    let store = store();
    for step in 1..=5 {
        event(&store, 0);
        checkpoint(&store, 0, step);
    }
    let listed = versions(&store, Kind::Checkpoint, None);
    let seqs: Vec<u64> = listed.iter().map(|v| v.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert_eq!(listed.iter().filter(|v| v.current).count(), 1);
    for (step, version) in (1..=5).zip(&listed) {
        let read = StateCall::GetCheckpointVersion {
            version: version.version,
        };
        match call(&store, 0, AgentCall::State(read)) {
            AgentReply::State(StateReply::Checkpoint(c)) => {
                assert_eq!(c.document, format!(r#"{{"step":{step}}}"#));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_memory_delete_is_a_version_and_reads_as_not_found() {
    let store = store();
    let put = |value: &str| StateCall::PutMemory {
        key: "k".into(),
        value: value.into(),
    };
    call(&store, 0, AgentCall::State(put("1")));
    call(&store, 0, AgentCall::State(put("2")));
    let delete = StateCall::DeleteMemory { key: "k".into() };
    call(&store, 0, AgentCall::State(delete));
    call(&store, 0, AgentCall::State(put("3")));
    let listed = versions(&store, Kind::Memory, Some("k"));
    let shape: Vec<(bool, bool)> = listed.iter().map(|v| (v.deleted, v.current)).collect();
    assert_eq!(
        shape,
        [(false, false), (false, false), (true, false), (false, true)]
    );
    let env = ObjectEnv {
        now_ms: BASE,
        max_events: 100,
        retention: policy(),
    };
    let read = |version| {
        let read = StateCall::GetMemoryVersion {
            key: "k".into(),
            version,
        };
        agent::execute(&store, &AgentCall::State(read), &env)
    };
    assert!(
        matches!(read(listed[1].version), Ok(AgentReply::State(StateReply::Memory(e))) if e.value == "2")
    );
    let deleted = read(listed[2].version).expect_err("a deletion");
    assert_eq!(deleted.code(), "memory_not_found");
    assert_eq!(read(999).expect_err("none").code(), "version_not_found");
}

#[test]
fn retention_keeps_the_young_the_last_of_each_bucket_and_what_pins_hold() {
    let store = store();
    // Times within buckets of 1 s: bucket 0 gets three versions, bucket 1
    // one, bucket 2 two.
    for (step, at) in [
        (1, 0),
        (2, 100),
        (3, 900),
        (4, 1_500),
        (5, 2_600),
        (6, 2_700),
    ] {
        event(&store, at);
        checkpoint(&store, at, step);
    }
    let pin = HistoryCall::PutPin {
        name: "before-four".into(),
        seq: Some(3),
    };
    call(&store, 3_000, AgentCall::History(pin));
    assert_eq!(steps(&store).len(), 6, "all young: nothing goes");
    // 50 s later every one is past keep-all, within the tier: the last of
    // each bucket stays (3, 4, 6), and the current (7).
    event(&store, 50_000);
    checkpoint(&store, 50_000, 7);
    let left: Vec<u64> = steps(&store).iter().map(|s| s.0).collect();
    assert_eq!(left, [3, 4, 6, 7]);
    // Past the tier: only the pinned point (seq 3) and the current stay.
    event(&store, 300_000);
    checkpoint(&store, 300_000, 8);
    assert_eq!(steps(&store), [(3, false), (8, true)]);
    // Unpinned, the next write lets it go.
    let unpin = HistoryCall::DeletePin {
        name: "before-four".into(),
    };
    call(&store, 300_000, AgentCall::History(unpin));
    checkpoint(&store, 300_001, 9);
    assert_eq!(
        steps(&store),
        [(8, false), (8, true)],
        "the young one and the current"
    );
}

#[test]
fn an_inline_kilo_db_version_is_kept_and_read_by_number() {
    let store = store();
    let commit = |bytes: &[u8]| SnapshotCall::Commit {
        version: 0,
        sha256: stasis_domain::chunk_store::sha256_hex(bytes),
        size: bytes.len() as u64,
        precondition: None,
        event_watermark: None,
        inline: Some(bytes.to_vec()),
        kv_key: None,
        grace_ms: 0,
    };
    call(&store, 0, AgentCall::Snapshot(commit(b"first")));
    call(&store, 0, AgentCall::Snapshot(commit(b"second")));
    let listed = versions(&store, Kind::DbSnapshot, None);
    assert_eq!(listed.len(), 2);
    let plan = SnapshotCall::Plan {
        with_inline: true,
        version: Some(listed[0].version),
    };
    match call(&store, 0, AgentCall::Snapshot(plan)) {
        AgentReply::Snapshot(SnapshotReply::Planned(Some(plan))) => {
            let bytes = match plan.source {
                stasis_domain::snapshot::chunk_calls::ChunkSource::Inline { bytes } => bytes,
                other => panic!("{other:?}"),
            };
            assert_eq!(bytes.as_deref(), Some(&b"first"[..]));
        }
        other => panic!("{other:?}"),
    }
}
