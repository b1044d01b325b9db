//! Fencing on the town's side: a container that was superseded never holds
//! the town again, and a fenced write from it changes nothing.

use crate::support::{Town, a_registry, town_with_agents};
use stasis_domain::DomainError;
use stasis_domain::fence::{FENCED, Fence, NOT_CURRENT};
use stasis_domain::sql::SqlStore;
use stasis_domain::town::{
    self, Standing, TownCall, TownEnv, TownReply, containers::REMEMBERED_CONTAINERS, log,
};

impl Town {
    fn standing(&mut self, container_id: &str) -> Standing {
        let call = TownCall::Standing {
            container_id: container_id.into(),
        };
        match self.call(call).expect("standing") {
            TownReply::Standing(standing) => standing,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// Runs `call` as a container-token write under `fence`.
    fn fenced(&mut self, call: TownCall, fence: &Fence) -> Result<TownReply, DomainError> {
        self.now_ms += 1;
        let env = TownEnv {
            now_ms: self.now_ms,
        };
        self.store.run("BEGIN", Vec::new()).expect("begin");
        let reply = town::execute_fenced(&self.store, &call, &env, Some(fence));
        let end = if reply.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.store.run(end, Vec::new()).expect("end transaction");
        reply
    }
}

fn fenced_code(result: Result<TownReply, DomainError>) -> (String, Option<String>) {
    match result {
        Err(DomainError::Fenced(refusal)) => (refusal.code, refusal.current_container_id),
        other => panic!("expected a fenced refusal, got {other:?}"),
    }
}

#[test]
fn a_superseded_container_never_becomes_current_again() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    let late = town.heartbeat("container-a");
    assert_eq!(late.superseded_by.as_deref(), Some("container-b"));
    assert!(!late.cleared_drain);
    assert_eq!(
        town.state().current_container_id.as_deref(),
        Some("container-b")
    );
    let ready: Vec<_> = town
        .events_of(log::CONTAINER_READY)
        .iter()
        .map(|e| e.data["container_id"].clone())
        .collect();
    assert_eq!(ready, ["container-a", "container-b"]);
}

#[test]
fn a_superseded_container_does_not_end_a_drain_it_did_not_start() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    town.evict("container-b");
    let late = town.heartbeat("container-a");
    assert!(late.draining && !late.cleared_drain);
    assert!(town.state().draining);
    let next = town.heartbeat("container-c");
    assert!(next.cleared_drain);
    assert_eq!(next.superseded_by, None);
}

#[test]
fn each_takeover_gets_the_next_epoch() {
    let mut town = town_with_agents();
    assert_eq!(
        town.standing("container-a"),
        Standing::NotCurrent {
            current_container_id: None
        }
    );
    town.heartbeat("container-a");
    town.heartbeat("container-a");
    assert_eq!(town.standing("container-a"), Standing::Current { epoch: 1 });
    town.heartbeat("container-b");
    assert_eq!(town.standing("container-b"), Standing::Current { epoch: 2 });
    assert_eq!(
        town.standing("container-a"),
        Standing::Superseded {
            current_container_id: Some("container-b".into())
        }
    );
}

#[test]
fn a_fenced_town_write_from_a_superseded_container_changes_nothing() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    let fence_a = Fence {
        container_id: "container-a".into(),
        epoch: 1,
    };
    let put = TownCall::PutRegistry {
        container_id: "container-a".into(),
        agents: a_registry(),
    };
    assert!(town.fenced(put.clone(), &fence_a).is_ok());
    town.heartbeat("container-b");
    let before = (town.get_registry(), town.state(), town.events().len());
    let (code, current) = fenced_code(town.fenced(put, &fence_a));
    assert_eq!(
        (code.as_str(), current.as_deref()),
        (FENCED, Some("container-b"))
    );
    let evict = TownCall::Evict {
        container_id: Some("container-a".into()),
        reason: None,
    };
    assert_eq!(fenced_code(town.fenced(evict, &fence_a)).0, FENCED);
    assert_eq!(
        (town.get_registry(), town.state(), town.events().len()),
        before
    );
}

#[test]
fn a_container_that_never_heartbeat_may_not_write_with_a_fence() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    let stranger = Fence {
        container_id: "container-x".into(),
        epoch: 1,
    };
    let put = TownCall::PutRegistry {
        container_id: "container-x".into(),
        agents: a_registry(),
    };
    let (code, current) = fenced_code(town.fenced(put, &stranger));
    assert_eq!(
        (code.as_str(), current.as_deref()),
        (NOT_CURRENT, Some("container-a"))
    );
}

#[test]
fn the_current_container_writes_through_its_fence_and_a_heartbeat_is_never_refused() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    let fence_a = Fence {
        container_id: "container-a".into(),
        epoch: 1,
    };
    let beat = TownCall::Heartbeat {
        container_id: "container-a".into(),
        idempotency_key: None,
    };
    let reply = town.fenced(beat, &fence_a);
    assert!(matches!(reply, Ok(TownReply::Heartbeat(b)) if b.superseded_by.is_some()));
    let fence_b = Fence {
        container_id: "container-b".into(),
        epoch: 2,
    };
    let put = TownCall::PutRegistry {
        container_id: "container-b".into(),
        agents: a_registry(),
    };
    assert!(town.fenced(put, &fence_b).is_ok());
    assert_eq!(
        town.get_registry().container_id.as_deref(),
        Some("container-b")
    );
}

#[test]
fn the_oldest_containers_are_forgotten_past_the_bound() {
    let mut town = Town::new();
    let count = REMEMBERED_CONTAINERS + 1;
    for n in 0..count {
        town.heartbeat(&format!("c{n}"));
    }
    let rows = town
        .store
        .execute("SELECT COUNT(*) FROM container_epochs", Vec::new())
        .expect("count");
    assert_eq!(
        rows[0][0],
        stasis_domain::sql::SqlValue::Integer(i64::try_from(REMEMBERED_CONTAINERS).expect("fits"))
    );
    assert!(matches!(town.standing("c0"), Standing::NotCurrent { .. }));
    assert!(matches!(town.standing("c1"), Standing::Superseded { .. }));
    assert_eq!(
        town.standing(&format!("c{}", count - 1)),
        Standing::Current { epoch: count }
    );
}

#[test]
fn a_town_current_before_epochs_existed_gets_epoch_one() {
    let mut town = Town::new();
    town.heartbeat("container-a");
    // As a town written before this version: a current container, no epochs.
    town.store
        .run("DELETE FROM container_epochs", Vec::new())
        .expect("delete");
    town::migrate(&town.store).expect("migrate again");
    assert_eq!(town.standing("container-a"), Standing::Current { epoch: 1 });
    town.heartbeat("container-b");
    assert_eq!(town.standing("container-b"), Standing::Current { epoch: 2 });
}
