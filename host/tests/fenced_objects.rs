//! The host's own half of fencing: a call that carries a fence is checked
//! against the object's database in the call's transaction, before the
//! component runs. These cases bypass the API's check of the town (which
//! refuses a superseded container first) to show that the objects refuse a
//! stale write on their own: the guard that closes the race between that
//! check and the write.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use bytes::Bytes;
use stasis_api::{Objects, Snapshots};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply},
    event_log::{AppendBatch, NewEvent, ReadQuery},
    fence::{FENCED, Fence},
    ids::AgentKey,
    snapshot::{self, PutRequest},
    town::{TownCall, TownReply},
};
use stasis_host::{
    config::{ObjectLimits, ServeConfig, ServerLimits},
    runtime::HostObjects,
};

fn objects(data: &std::path::Path) -> HostObjects {
    let config = ServeConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: data.to_path_buf(),
        durability: stasis_sqlite::Durability::Os,
        max_events_per_agent: 100,
        snapshot_inline_limit: snapshot::DEFAULT_INLINE_LIMIT,
        keys: None,
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

fn append() -> AgentCall {
    AgentCall::AppendEvents(AppendBatch::new(vec![NewEvent::new("t", None, "{}")]))
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
    match objects
        .agent(key, AgentCall::ReadEvents(ReadQuery::after(0)))
        .await
        .expect("read")
    {
        AgentReply::Events(page) => page.last_seq,
        other => panic!("unexpected {other:?}"),
    }
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
        successor.agent(&key, append()).await.expect("b writes");
        assert_fenced(zombie.agent(&key, append()).await, "c-b");
        let request = PutRequest {
            expected_sha256: None,
            precondition: None,
            event_watermark: None,
            inline_limit: snapshot::DEFAULT_INLINE_LIMIT,
            key_prefix: snapshot::key_prefix(&key),
        };
        let put = zombie
            .snapshot_put(&key, request, Bytes::from_static(b"zombie bytes"))
            .await;
        assert_fenced(put, "c-b");
        assert_eq!(last_seq(&objects, &key).await, 2);
        assert!(
            objects
                .snapshot_read(&key, false)
                .await
                .expect("read")
                .is_none()
        );
        let read = zombie
            .agent(&key, AgentCall::ReadEvents(ReadQuery::after(0)))
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
            let beat = TownCall::Heartbeat {
                container_id: container.into(),
                idempotency_key: None,
            };
            objects.town("t", beat).await.expect("heartbeat");
        }
        let put = |container: &str| TownCall::PutRegistry {
            container_id: container.into(),
            agents: Vec::new(),
        };
        let refused = objects.fenced(fence("c-a", 1)).town("t", put("c-a")).await;
        assert_fenced(refused, "c-b");
        let registry = objects.town("t", TownCall::GetRegistry).await;
        assert!(matches!(registry, Ok(TownReply::Registry(r)) if r.container_id.is_none()));
        let allowed = objects.fenced(fence("c-b", 2)).town("t", put("c-b")).await;
        assert!(allowed.is_ok(), "{allowed:?}");
    });
}
