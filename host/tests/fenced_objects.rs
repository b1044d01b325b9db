//! The host's own half of fencing: a call that carries a fence is checked
//! against the object's database in the call's transaction, before the
//! component runs. These cases bypass the API's check of the town (which
//! refuses a superseded container first) to show that the objects refuse a
//! stale write on their own: the guard that closes the race between that
//! check and the write.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use stasis_api::{Objects, Snapshots};
use stasis_domain::{
    DomainError, chunk_store,
    event_log::{AppendBatch, AppendOutcome, NewEvent, ReadQuery},
    fence::{FENCED, Fence},
    ids::AgentKey,
    operation::{
        agent::{self as agent_op, AgentOperation},
        town as town_op,
    },
    snapshot::{
        self, PutRequest,
        chunk_saga::{self, CommitRequest},
        manifest::Manifest,
        saga,
    },
    town::TownReply,
};
use stasis_host::{
    config::{ObjectLimits, ServeConfig, ServerLimits},
    runtime::HostObjects,
};

fn objects(data: &std::path::Path) -> HostObjects {
    let config = ServeConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.to_path_buf(),
        // Shared with the other host tests (host/tests/support).
        cache_dir: Some(std::env::var_os("STASIS_CACHE_DIR").map_or_else(
            || std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("compiled-components"),
            std::path::PathBuf::from,
        )),
        durability: stasis_sqlite::Durability::Os,
        max_events_per_agent: 100,
        snapshot_inline_limit: snapshot::DEFAULT_INLINE_LIMIT,
        snapshot_limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
        workspace_limit: stasis_domain::workspace::DEFAULT_WORKSPACE_LIMIT,
        snapshot_pending_ttl: std::time::Duration::from_secs(3600),
        snapshot_grace: std::time::Duration::ZERO,
        liveness_timeout_secs: 60,
        history_retention: Default::default(),
        keys: None,
        summariser: None,
        server: ServerLimits::default(),
        objects: ObjectLimits::default(),
    };
    let api = stasis_host::server::build_api(&config).expect("the host starts");
    api.objects().clone()
}

fn fence(container_id: &str, epoch: u64) -> Fence {
    Fence {
        container_id: container_id.into(),
        epoch,
    }
}

fn append() -> AgentOperation<AppendOutcome> {
    agent_op::append_events(AppendBatch::new(vec![NewEvent::new("t", None, "{}")]))
}

fn assert_fenced<T: std::fmt::Debug>(result: Result<T, DomainError>, holder: &str) {
    match result {
        Err(DomainError::Fenced(refusal)) => {
            assert_eq!(refusal.code, FENCED);
            assert_eq!(refusal.current_container_id.as_deref(), Some(holder));
        }
        other => panic!("expected container_fenced, got {other:?}"),
    }
}

async fn last_seq(objects: &HostObjects, key: &AgentKey) -> u64 {
    objects
        .agent(key, agent_op::read_events(ReadQuery::after(0)))
        .await
        .expect("read")
        .last_seq
}

async fn put_chunk(
    objects: &HostObjects,
    key: &AgentKey,
    bytes: &[u8],
) -> Result<bool, DomainError> {
    let upload = chunk_store::saga::Upload {
        pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
        stale_before: objects.snapshot_claims_stale_before(),
    };
    let blobs = objects.snapshot_blobs()?;
    let object = objects.snapshot_object(key);
    let prefix = chunk_store::key_prefix(key);
    let name = chunk_store::sha256_hex(bytes);
    chunk_store::saga::put_chunk(&object, &blobs, &prefix, &name, bytes, upload).await
}

/// Every snapshot write of `zombie` is refused: a whole-file put, a chunk
/// upload, a `missing` query and the commit of a manifest naming `early`,
/// a chunk it uploaded before it was superseded.
async fn assert_snapshot_writes_fenced(zombie: &HostObjects, key: &AgentKey, early: &[u8]) {
    let (object, blobs) = (
        zombie.snapshot_object(key),
        zombie.snapshot_blobs().expect("blobs"),
    );
    let request = PutRequest {
        expected_sha256: None,
        precondition: None,
        event_watermark: None,
        inline_limit: snapshot::DEFAULT_INLINE_LIMIT,
        key_prefix: chunk_store::key_prefix(key),
        limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
        pending_ttl_ms: zombie.snapshot_pending_ttl_ms(),
        stale_before: zombie.snapshot_claims_stale_before(),
        grace_ms: 0,
    };
    let put = saga::put(&object, &blobs, &request, b"zombie bytes").await;
    assert_fenced(put, "c-b");
    assert_fenced(put_chunk(zombie, key, b"a later chunk").await, "c-b");
    let name = chunk_store::sha256_hex(early);
    let asked = chunk_store::saga::missing(&object, vec![name.clone()], 1000).await;
    assert_fenced(asked, "c-b");
    let manifest = Manifest {
        size: u64::try_from(early.len()).expect("size"),
        sha256: name.clone(),
        chunk_size: 4096,
        chunks: vec![name],
    };
    let commit = CommitRequest {
        manifest,
        precondition: None,
        event_watermark: None,
        limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
        sha256_from_chunks: false,
        grace_ms: 0,
    };
    let committed = chunk_saga::commit(&object, &blobs, commit).await;
    assert_fenced(committed, "c-b");
}

#[test]
fn an_agent_refuses_a_write_older_than_the_newest_container_that_wrote_to_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let runtime = stasis_host::runtime::async_runtime().expect("runtime");
    runtime.block_on(async {
        let objects = objects(data.path());
        let key = AgentKey::new("t", "r", "mayor").expect("key");
        let (zombie, successor) = (
            objects.fenced(fence("c-a", 1)),
            objects.fenced(fence("c-b", 2)),
        );
        zombie.agent(&key, append()).await.expect("a writes first");
        let early = b"a chunk a uploaded while it held the town";
        put_chunk(&zombie, &key, early)
            .await
            .expect("a uploads a chunk first");
        successor.agent(&key, append()).await.expect("b writes");
        assert_fenced(zombie.agent(&key, append()).await, "c-b");
        assert_snapshot_writes_fenced(&zombie, &key, early).await;
        assert_eq!(last_seq(&objects, &key).await, 2);
        let current = chunk_saga::plan(&objects.snapshot_object(&key), false).await;
        assert!(matches!(current, Ok(None)), "no snapshot: {current:?}");
        let read = zombie
            .agent(&key, agent_op::read_events(ReadQuery::after(0)))
            .await;
        assert!(read.is_ok(), "reads stay allowed: {read:?}");
    });
}

#[test]
fn a_town_refuses_a_fenced_write_from_a_container_that_no_longer_holds_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let runtime = stasis_host::runtime::async_runtime().expect("runtime");
    runtime.block_on(async {
        let objects = objects(data.path());
        for container in ["c-a", "c-b"] {
            let beat = town_op::heartbeat(container.into(), None);
            objects.town("t", beat).await.expect("heartbeat");
        }
        let put = |container: &str| town_op::put_registry(container.into(), Vec::new());
        let refused = objects.fenced(fence("c-a", 1)).town("t", put("c-a")).await;
        assert_fenced(refused, "c-b");
        let registry = objects
            .town("t", town_op::get_registry())
            .await
            .map(TownReply::Registry);
        assert!(matches!(registry, Ok(TownReply::Registry(r)) if r.container_id.is_none()));
        let allowed = objects.fenced(fence("c-b", 2)).town("t", put("c-b")).await;
        assert!(allowed.is_ok(), "{allowed:?}");
    });
}
