//! Snapshot rules: routing by size, the metadata switch, verification and
//! the sweep, over real SQLite and an in-memory KV store.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    chunk_store::{
        ports::{LocalObject, run_ready},
        sha256_hex,
    },
    snapshot::{self, Precondition, PutRequest, StorageKind, saga},
};
use stasis_sqlite::SqliteStore;
use support::MemoryKv;

/// The current snapshot and its bytes, if any.
type Found = Option<(snapshot::SnapshotMeta, Option<Vec<u8>>)>;

struct Agent {
    store: SqliteStore,
    kv: MemoryKv,
}

const PREFIX: &str = "snapshots/t/r/a/";
const NOW: i64 = 1_700_000_000_000;
/// A deletion whose chunks go at once.
const NO_GRACE: saga::Aging = saga::Aging {
    grace_ms: 0,
    stale_before: 0,
};

impl Agent {
    fn new() -> Self {
        Self {
            store: support::agent_store(),
            kv: MemoryKv::default(),
        }
    }

    fn object(&self) -> LocalObject<'_, SqliteStore> {
        self.object_at(NOW)
    }

    fn object_at(&self, now_ms: i64) -> LocalObject<'_, SqliteStore> {
        LocalObject {
            store: &self.store,
            env: ObjectEnv {
                now_ms,
                max_events: 10_000,
                retention: Default::default(),
            },
        }
    }

    fn put_with(
        &self,
        body: &[u8],
        request: PutRequest,
    ) -> Result<snapshot::SnapshotMeta, DomainError> {
        run_ready(saga::put(&self.object(), &self.kv, &request, body)).expect("ready")
    }

    fn put(&self, body: &[u8]) -> Result<snapshot::SnapshotMeta, DomainError> {
        self.put_with(body, request())
    }

    fn get(&self) -> Result<Found, DomainError> {
        run_ready(saga::get(&self.object(), &self.kv, true)).expect("ready")
    }

    fn kv_keys(&self) -> Vec<String> {
        self.kv.values.borrow().keys().cloned().collect()
    }
}

/// A small snapshot limit, so that the test stays small.
const LIMIT: u64 = 64 * 1024;

fn body(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn small_bodies_stay_inline_and_large_ones_go_to_kv() {
    let agent = Agent::new();
    for (len, storage) in [
        (0, StorageKind::Inline),
        (1024, StorageKind::Inline),
        (1025, StorageKind::Kv),
    ] {
        let bytes = body(len, 7);
        let meta = agent.put(&bytes).expect("stored");
        assert_eq!(meta.storage, storage, "{len} bytes");
        assert_eq!(meta.size, len as u64);
        assert_eq!(meta.sha256, sha256_hex(&bytes));
        let (got, data) = agent.get().expect("read").expect("exists");
        assert_eq!(got, meta);
        assert_eq!(data.expect("bytes"), bytes);
    }
    assert_eq!(agent.kv_keys(), vec![format!("{PREFIX}v3")]);
}

#[test]
fn versions_count_up_and_superseded_keys_are_deleted() {
    let agent = Agent::new();
    let first = agent.put(&body(5000, 1)).expect("first");
    let second = agent.put(&body(6000, 2)).expect("second");
    assert_eq!((first.version, second.version), (1, 2));
    assert_eq!(agent.kv_keys(), vec![format!("{PREFIX}v2")]);
    let third = agent.put(&body(10, 3)).expect("inline");
    assert_eq!(third.version, 3);
    assert!(
        agent.kv_keys().is_empty(),
        "the KV key went with the switch to inline"
    );
}

#[test]
fn the_watermark_defaults_to_the_last_seq() {
    let agent = Agent::new();
    let batch = stasis_domain::event_log::AppendBatch::new(vec![
        stasis_domain::event_log::NewEvent::new("x", None, "{}");
        3
    ]);
    stasis_domain::event_log::append(
        &agent.store,
        &batch,
        &stasis_domain::event_log::AppendSettings::new(NOW),
    )
    .expect("appended");
    assert_eq!(agent.put(b"db").expect("stored").event_watermark, 3);
    let mut given = request();
    given.event_watermark = Some(42);
    assert_eq!(
        agent
            .put_with(b"db", given)
            .expect("stored")
            .event_watermark,
        42
    );
}

#[test]
fn a_wrong_sha256_changes_nothing() {
    let agent = Agent::new();
    let before = agent.put(&body(4000, 1)).expect("stored");
    let mut wrong = request();
    wrong.expected_sha256 = Some(sha256_hex(b"something else"));
    let err = agent.put_with(&body(4000, 2), wrong).expect_err("refused");
    assert_eq!(err.code(), "sha256_mismatch");
    let mut malformed = request();
    malformed.expected_sha256 = Some("abc".into());
    let err = agent
        .put_with(&body(4000, 2), malformed)
        .expect_err("refused");
    assert_eq!(err.code(), "invalid_request");
    assert_eq!(agent.get().expect("read").expect("exists").0, before);
    assert_eq!(agent.kv_keys(), vec![format!("{PREFIX}v1")]);
    let mut right = request();
    right.expected_sha256 = Some(sha256_hex(&body(4000, 2)).to_uppercase());
    assert_eq!(
        agent
            .put_with(&body(4000, 2), right)
            .expect("stored")
            .version,
        2
    );
}

#[test]
fn if_match_guards_the_switch() {
    let agent = Agent::new();
    let mut exists = request();
    exists.precondition = Some(Precondition::Exists);
    assert_eq!(
        agent
            .put_with(b"a", exists.clone())
            .expect_err("none yet")
            .code(),
        "precondition_failed"
    );
    let first = agent.put(b"a").expect("stored");
    assert_eq!(agent.put_with(b"b", exists).expect("exists").version, 2);
    let mut stale = request();
    stale.precondition = Some(Precondition::OneOf(vec![first.sha256]));
    let err = agent.put_with(&body(9000, 1), stale).expect_err("stale");
    assert_eq!(err.code(), "precondition_failed");
    assert!(
        agent.kv_keys().is_empty(),
        "nothing written for a refused put"
    );
    assert_eq!(
        agent
            .get()
            .expect("read")
            .expect("exists")
            .1
            .expect("bytes"),
        b"b"
    );
}

#[test]
fn too_large_is_refused_before_anything() {
    let agent = Agent::new();
    agent.put(b"old").expect("stored");
    let huge = vec![0u8; LIMIT as usize + 1];
    let err = agent.put(&huge).expect_err("refused");
    assert_eq!(err.code(), "snapshot_too_large");
    assert_eq!(
        agent
            .get()
            .expect("read")
            .expect("exists")
            .1
            .expect("bytes"),
        b"old"
    );
}

#[test]
fn a_failed_kv_write_changes_nothing() {
    let mut agent = Agent::new();
    agent.put(b"old").expect("stored");
    agent.kv.fail_puts = true;
    agent.put(&body(5000, 1)).expect_err("disk full");
    let (meta, bytes) = agent.get().expect("read").expect("exists");
    assert_eq!((meta.version, bytes.expect("bytes")), (1, b"old".to_vec()));
    let in_use = run_ready(saga::sweep(&agent.object(), &agent.kv, PREFIX, 0)).expect("ready");
    assert_eq!(in_use.expect("swept"), 0);
}

#[test]
fn corrupt_bytes_are_never_served() {
    let agent = Agent::new();
    agent.put(&body(5000, 1)).expect("stored");
    agent
        .kv
        .values
        .borrow_mut()
        .insert(format!("{PREFIX}v1"), body(5000, 2));
    let err = agent.get().expect_err("corrupt");
    assert!(
        matches!(err, DomainError::Storage(ref m) if m.contains("corrupt")),
        "{err:?}"
    );
}

#[test]
fn a_key_not_visible_yet_is_a_503_not_stale_bytes() {
    let agent = Agent::new();
    agent.put(&body(5000, 1)).expect("stored");
    agent.put(&body(5000, 2)).expect("stored");
    agent.kv.hidden.borrow_mut().push(format!("{PREFIX}v2"));
    let err = agent.get().expect_err("propagating");
    assert_eq!(err.code(), "snapshot_propagating");
    assert!(matches!(err, DomainError::Unavailable(_)));
}

#[test]
fn delete_removes_the_key_and_versions_are_not_reused() {
    let agent = Agent::new();
    agent.put(&body(5000, 1)).expect("stored");
    run_ready(saga::delete(&agent.object(), &agent.kv, PREFIX, NO_GRACE))
        .expect("ready")
        .expect("deleted");
    assert!(agent.kv_keys().is_empty());
    assert_eq!(agent.get().expect("read"), None);
    let err = run_ready(saga::delete(&agent.object(), &agent.kv, PREFIX, NO_GRACE))
        .expect("ready")
        .expect_err("nothing to delete");
    assert_eq!(err.code(), "snapshot_not_found");
    assert_eq!(agent.put(&body(5000, 2)).expect("stored").version, 2);
}

#[test]
fn sweep_removes_orphans_but_not_puts_in_flight() {
    let agent = Agent::new();
    agent.put(&body(5000, 1)).expect("stored");
    // A crash after a KV write and before the switch leaves this behind.
    agent
        .kv
        .values
        .borrow_mut()
        .insert(format!("{PREFIX}v9"), vec![1]);
    // A put in flight: reserved (pending) and written, not switched yet.
    let reserved = snapshot::execute(
        &agent.store,
        &snapshot::SnapshotCall::Reserve {
            size: 5000,
            precondition: None,
            inline_limit: 1024,
            key_prefix: PREFIX.into(),
            limit: LIMIT,
        },
        &agent.object().env,
    )
    .expect("reserved");
    let snapshot::SnapshotReply::Reserved(reserved) = reserved else {
        panic!("reserved: {reserved:?}");
    };
    let in_flight = reserved.kv_key.expect("a KV key");
    agent
        .kv
        .values
        .borrow_mut()
        .insert(in_flight.clone(), vec![2]);
    let removed = run_ready(saga::sweep(&agent.object(), &agent.kv, PREFIX, 0))
        .expect("ready")
        .expect("swept");
    assert_eq!(removed, 1);
    assert_eq!(
        agent.kv_keys(),
        vec![format!("{PREFIX}v1"), in_flight.clone()]
    );
    // Much later the reservation is given up and its key goes too.
    let later = agent.object_at(NOW + snapshot::PENDING_TTL_MS + 1);
    let removed = run_ready(saga::sweep(&later, &agent.kv, PREFIX, 0))
        .expect("ready")
        .expect("swept");
    assert_eq!(removed, 1);
    assert_eq!(agent.kv_keys(), vec![format!("{PREFIX}v1")]);
}

fn request() -> PutRequest {
    support::put_request(PREFIX, LIMIT, 0)
}
