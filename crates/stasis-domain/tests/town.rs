//! The town object's rules, checked against real SQLite.
//!
//! Guards the failure stasis exists for: a container restart must not lose
//! the Mayor's work. An eviction drains the town; a message for the Mayor
//! during the gap is deferred; the late heartbeat of the dying container
//! must not end the drain; the next container's heartbeat ends it and gets
//! the deferred dispatch, exactly once.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use proptest::prelude::*;
use stasis_domain::sql::SqlStore;
use stasis_domain::town::{
    self, AgentRef, EvictOutcome, HeartbeatOutcome, MayorAction, Registry, RegistryAgent,
    TownAgent, TownCall, TownEnv, TownEvent, TownEventPage, TownReply, TownState, log,
};
use stasis_domain::{DomainError, limits};
use stasis_sqlite::SqliteStore;

/// A town object as a runtime drives it: one transaction per call.
struct Town {
    store: SqliteStore,
    now_ms: i64,
}

impl Town {
    fn new() -> Self {
        let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
        town::migrate(&store).expect("schema applies");
        Self {
            store,
            now_ms: 1_700_000_000_000,
        }
    }

    fn call(&mut self, call: TownCall) -> Result<TownReply, DomainError> {
        self.now_ms += 1;
        let env = TownEnv {
            now_ms: self.now_ms,
        };
        self.store.run("BEGIN", Vec::new()).expect("begin");
        let reply = town::execute(&self.store, &call, &env);
        let end = if reply.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.store.run(end, Vec::new()).expect("end transaction");
        reply
    }

    fn state(&mut self) -> TownState {
        match self.call(TownCall::GetState).expect("get state") {
            TownReply::State(state) => state,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn evict(&mut self, container_id: &str) -> EvictOutcome {
        let call = TownCall::Evict {
            container_id: container_id.into(),
            reason: Some("SIGTERM".into()),
        };
        match self.call(call).expect("evict") {
            TownReply::Evicted(outcome) => outcome,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn heartbeat(&mut self, container_id: &str) -> HeartbeatOutcome {
        let call = TownCall::Heartbeat {
            container_id: container_id.into(),
        };
        match self.call(call).expect("heartbeat") {
            TownReply::Heartbeat(outcome) => outcome,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn register(&mut self, rig_id: &str, agent_id: &str, role: &str) -> Result<bool, DomainError> {
        let call = TownCall::RegisterAgent {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
            role: role.into(),
        };
        match self.call(call)? {
            TownReply::Registered(registered) => Ok(registered.created),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn put_registry(
        &mut self,
        container_id: &str,
        agents: Vec<RegistryAgent>,
    ) -> Result<Registry, DomainError> {
        let call = TownCall::PutRegistry {
            container_id: container_id.into(),
            agents,
        };
        match self.call(call)? {
            TownReply::Registry(registry) => Ok(registry),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn get_registry(&mut self) -> Registry {
        match self.call(TownCall::GetRegistry).expect("get registry") {
            TownReply::Registry(registry) => registry,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn mayor_message(&mut self, message_seq: u64) -> Result<MayorAction, DomainError> {
        match self.call(TownCall::MayorMessage { message_seq })? {
            TownReply::MayorMessage(action) => Ok(action),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn dispatch(&mut self, rig_id: &str, agent_id: &str) -> Result<TownAgent, DomainError> {
        let call = TownCall::Dispatch {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
        };
        match self.call(call)? {
            TownReply::Dispatched(agent) => Ok(agent),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    fn read(&mut self, after: u64, limit: u64) -> Result<TownEventPage, DomainError> {
        match self.call(TownCall::ReadEvents { after, limit })? {
            TownReply::Events(page) => Ok(page),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// Every retained event, oldest first.
    fn events(&mut self) -> Vec<TownEvent> {
        let first = self
            .read(0, 1)
            .map(|p| p.first_seq)
            .unwrap_or_else(|err| match err {
                DomainError::CursorExpired { first_seq } => first_seq,
                other => panic!("unexpected error {other:?}"),
            });
        let mut after = first.saturating_sub(1);
        let mut all = Vec::new();
        loop {
            let page = self.read(after, 1_000).expect("read events");
            all.extend(page.events);
            after = page.next_after;
            if !page.has_more {
                return all;
            }
        }
    }

    fn events_of(&mut self, event_type: &str) -> Vec<TownEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.event_type == event_type)
            .collect()
    }
}

fn agent(rig_id: &str, agent_id: &str, role: &str) -> TownAgent {
    TownAgent {
        rig_id: rig_id.into(),
        agent_id: agent_id.into(),
        role: role.into(),
    }
}

fn running(rig_id: &str, agent_id: &str, role: &str, session: Option<&str>) -> RegistryAgent {
    RegistryAgent {
        agent_id: agent_id.into(),
        rig_id: rig_id.into(),
        role: role.into(),
        session_id: session.map(str::to_owned),
        port: Some(4096),
    }
}

/// A town with a mayor and two polecats registered.
fn town_with_agents() -> Town {
    let mut town = Town::new();
    town.register("hq", "mayor", "mayor").expect("mayor");
    town.register("rig1", "polecat-1", "polecat")
        .expect("polecat");
    town.register("rig1", "polecat-2", "polecat")
        .expect("polecat");
    town
}

fn a_registry() -> Vec<RegistryAgent> {
    vec![
        running("hq", "mayor", "mayor", Some("ses-1")),
        running("rig1", "polecat-1", "polecat", None),
        running("rig1", "polecat-2", "polecat", None),
    ]
}

fn released_reason_count(town: &mut Town) -> usize {
    town.events_of(log::DISPATCH_AGENT)
        .iter()
        .filter(|e| e.data["reason"] == "released")
        .count()
}

#[test]
fn the_spec_scenario_survives_a_container_restart() {
    let mut town = town_with_agents();

    // 1. A heartbeats and registers its agents.
    let first = town.heartbeat("container-a");
    assert!(!first.draining && !first.cleared_drain);
    assert_eq!(first.registry.container_id, None);
    assert!(first.registry.agents.is_empty());
    town.put_registry("container-a", a_registry())
        .expect("registry");
    let mayor = Some(AgentRef {
        rig_id: "hq".into(),
        agent_id: "mayor".into(),
    });
    assert_eq!(town.state().mayor, mayor);

    // 2. A is evicted: the town drains.
    let evicted = town.evict("container-a");
    assert!(evicted.draining && !evicted.already_draining);
    let state = town.state();
    assert!(state.draining);
    assert_eq!(state.evicting_container_id.as_deref(), Some("container-a"));

    // 3. The user writes to the mayor during the gap.
    assert_eq!(
        town.mayor_message(7).expect("message"),
        MayorAction::Deferred
    );

    // 5. A late heartbeat from A changes nothing.
    let late = town.heartbeat("container-a");
    assert!(late.draining && !late.cleared_drain && late.evicted);
    assert!(late.released.is_empty());
    assert!(town.state().draining);

    // 4. B heartbeats: the drain ends and the mayor's dispatch is released.
    let b = town.heartbeat("container-b");
    assert!(!b.draining && b.cleared_drain && !b.evicted);
    assert_eq!(b.released, vec![agent("hq", "mayor", "mayor")]);
    assert_eq!(b.registry.agents.len(), 3, "B gets the registry to hydrate");
    let state = town.state();
    assert!(!state.draining);
    assert_eq!(state.evicting_container_id, None);
    assert_eq!(state.current_container_id.as_deref(), Some("container-b"));
    assert_eq!(state.last_heartbeat_at, Some(town.now_ms - 1));

    // Released once only.
    let again = town.heartbeat("container-b");
    assert!(!again.cleared_drain && again.released.is_empty());
    assert_eq!(released_reason_count(&mut town), 1);

    let types: Vec<String> = town.events().into_iter().map(|e| e.event_type).collect();
    assert_eq!(
        types,
        [
            log::CONTAINER_READY,
            log::REGISTRY_UPDATED,
            log::CONTAINER_EVICTION,
            log::MAYOR_MESSAGE,
            log::DISPATCH_DEFERRED,
            log::CONTAINER_READY,
            log::DISPATCH_AGENT,
        ]
    );
    let message = &town.events_of(log::MAYOR_MESSAGE)[0];
    assert_eq!(message.data["message_seq"], 7);
    let ready = town.events_of(log::CONTAINER_READY);
    assert_eq!(ready[1].data["container_id"], "container-b");
    assert_eq!(ready[1].data["cleared_drain"], true);
}

#[test]
fn a_repeated_eviction_records_nothing_new() {
    let mut town = Town::new();
    town.heartbeat("container-a");
    let first = town.evict("container-a");
    let events = town.events().len();
    let again = town.evict("container-a");
    assert!(!first.already_draining && !first.already_evicted);
    assert!(again.draining && again.already_draining && again.already_evicted);
    assert_eq!(again.evicting_container_id.as_deref(), Some("container-a"));
    assert_eq!(town.events().len(), events);
    let eviction = &town.events_of(log::CONTAINER_EVICTION)[0];
    assert_eq!(eviction.data["container_id"], "container-a");
    assert_eq!(eviction.data["reason"], "SIGTERM");
}

#[test]
fn the_first_eviction_wins_and_a_second_evicting_container_cannot_end_the_drain() {
    let mut town = Town::new();
    town.evict("container-a");
    let second = town.evict("container-c");
    assert!(second.already_draining && !second.already_evicted);
    assert_eq!(second.evicting_container_id.as_deref(), Some("container-a"));
    assert_eq!(town.events_of(log::CONTAINER_EVICTION).len(), 1);

    assert!(!town.heartbeat("container-c").cleared_drain);
    assert!(town.heartbeat("container-b").cleared_drain);
}

#[test]
fn a_late_heartbeat_from_the_replaced_container_does_not_take_the_town_back() {
    let mut town = Town::new();
    town.heartbeat("container-a");
    town.evict("container-a");
    town.heartbeat("container-b");
    let events = town.events().len();

    let late = town.heartbeat("container-a");
    assert!(late.evicted && !late.cleared_drain && !late.draining);
    let state = town.state();
    assert_eq!(state.current_container_id.as_deref(), Some("container-b"));
    assert_eq!(town.events().len(), events);
}

#[test]
fn a_retried_eviction_from_the_replaced_container_does_not_drain_again() {
    let mut town = Town::new();
    town.evict("container-a");
    town.heartbeat("container-b");
    let retry = town.evict("container-a");
    assert!(!retry.draining && retry.already_evicted && !retry.already_draining);
    assert!(!town.state().draining);
    assert_eq!(town.events_of(log::CONTAINER_EVICTION).len(), 1);
}

#[test]
fn heartbeats_without_a_drain_record_only_a_change_of_container() {
    let mut town = Town::new();
    town.heartbeat("container-a");
    town.heartbeat("container-a");
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    let ready = town.events_of(log::CONTAINER_READY);
    assert_eq!(ready.len(), 2);
    assert_eq!(ready[1].data["container_id"], "container-b");
    assert_eq!(ready[1].data["cleared_drain"], false);
    assert_eq!(
        town.state().current_container_id.as_deref(),
        Some("container-b")
    );
}

#[test]
fn a_town_never_seen_reads_empty() {
    let mut town = Town::new();
    assert_eq!(
        town.state(),
        TownState {
            draining: false,
            evicting_container_id: None,
            current_container_id: None,
            last_heartbeat_at: None,
            mayor: None,
        }
    );
    let registry = town.get_registry();
    assert_eq!(registry.container_id, None);
    assert!(registry.agents.is_empty());
    let page = town.read(0, 10).expect("read");
    assert_eq!((page.first_seq, page.last_seq, page.next_after), (0, 0, 0));
    assert!(page.events.is_empty() && !page.has_more);
}

#[test]
fn bad_container_ids_and_long_reasons_are_refused() {
    let mut town = Town::new();
    for bad in ["", "..", "a/b", "has space"] {
        let evict = TownCall::Evict {
            container_id: bad.into(),
            reason: None,
        };
        assert_eq!(town.call(evict).unwrap_err().code(), "invalid_id");
        let beat = TownCall::Heartbeat {
            container_id: bad.into(),
        };
        assert_eq!(town.call(beat).unwrap_err().code(), "invalid_id");
    }
    let long = TownCall::Evict {
        container_id: "container-a".into(),
        reason: Some("x".repeat(town::eviction::MAX_REASON_BYTES + 1)),
    };
    assert_eq!(town.call(long).unwrap_err().code(), "invalid_request");
    assert!(!town.state().draining);
}

#[test]
fn a_town_has_at_most_one_mayor() {
    let mut town = Town::new();
    assert!(town.register("hq", "mayor", "mayor").expect("first mayor"));
    assert!(
        !town
            .register("hq", "mayor", "mayor")
            .expect("same mayor again")
    );
    let err = town.register("hq", "deputy", "mayor").unwrap_err();
    assert!(matches!(err, DomainError::Conflict(_)));
    assert_eq!(err.code(), "mayor_exists");

    town.register("hq", "mayor", "retired").expect("demote");
    town.register("hq", "deputy", "mayor").expect("new mayor");
    assert_eq!(
        town.state().mayor.map(|m| m.agent_id).as_deref(),
        Some("deputy")
    );
}

#[test]
fn forgetting_an_agent_says_whether_it_existed_and_frees_the_mayor_seat() {
    let mut town = town_with_agents();
    let forget = |agent_id: &str| TownCall::ForgetAgent {
        rig_id: "hq".into(),
        agent_id: agent_id.into(),
    };
    assert_eq!(
        town.call(forget("mayor")).expect("forget"),
        TownReply::Forgotten(true)
    );
    assert_eq!(
        town.call(forget("mayor")).expect("forget"),
        TownReply::Forgotten(false)
    );
    assert_eq!(town.state().mayor, None);
    assert_eq!(town.mayor_message(1).unwrap_err().code(), "mayor_not_found");
}

#[test]
fn agents_are_listed_by_rig_then_agent() {
    let mut town = Town::new();
    town.register("rig2", "a", "polecat").expect("register");
    town.register("rig1", "b", "refinery").expect("register");
    town.register("rig1", "a", "polecat").expect("register");
    town.register("rig1", "b", "polecat").expect("role change");
    let listed = town.call(TownCall::ListAgents).expect("list");
    assert_eq!(
        listed,
        TownReply::Agents(vec![
            agent("rig1", "a", "polecat"),
            agent("rig1", "b", "polecat"),
            agent("rig2", "a", "polecat"),
        ])
    );
}

#[test]
fn bad_agent_registrations_are_refused() {
    let mut town = Town::new();
    assert_eq!(
        town.register("..", "a", "polecat").unwrap_err().code(),
        "invalid_id"
    );
    assert_eq!(
        town.register("rig", "a/b", "polecat").unwrap_err().code(),
        "invalid_id"
    );
    assert_eq!(
        town.register("rig", "a", "").unwrap_err().code(),
        "invalid_request"
    );
    assert_eq!(
        town.register("rig", "a", &"r".repeat(129))
            .unwrap_err()
            .code(),
        "invalid_request"
    );
    assert_eq!(
        town.call(TownCall::ListAgents).expect("list"),
        TownReply::Agents(vec![])
    );
}

#[test]
fn a_registry_put_replaces_the_whole_registry() {
    let mut town = Town::new();
    let put = town
        .put_registry("container-a", a_registry())
        .expect("first put");
    assert_eq!(put.container_id.as_deref(), Some("container-a"));
    assert_eq!(put.updated_at, Some(town.now_ms));
    assert_eq!(town.get_registry(), put);

    let smaller = vec![running("rig1", "polecat-1", "polecat", Some("ses-9"))];
    let second = town
        .put_registry("container-b", smaller.clone())
        .expect("second put");
    assert_eq!(second.agents, smaller);
    assert_eq!(town.get_registry(), second);

    let updates = town.events_of(log::REGISTRY_UPDATED);
    assert_eq!(updates.len(), 2);
    assert_eq!(updates[1].data["container_id"], "container-b");
    assert_eq!(updates[1].data["agents"], 1);
}

#[test]
fn an_invalid_registry_is_refused_and_changes_nothing() {
    let mut town = Town::new();
    let kept = town
        .put_registry("container-a", a_registry())
        .expect("first put");
    let mut duplicate = a_registry();
    duplicate.push(running("hq", "mayor", "polecat", None));
    let mut bad_session = a_registry();
    bad_session[1].session_id = Some("a b".into());
    let mut empty_role = a_registry();
    empty_role[2].role = String::new();
    let mut bad_rig = a_registry();
    bad_rig[0].rig_id = ".".into();
    let too_many: Vec<RegistryAgent> = (0..=town::registry::MAX_REGISTRY_AGENTS)
        .map(|i| running("rig", &format!("agent-{i}"), "polecat", None))
        .collect();
    let cases = [
        ("container-b", duplicate, "duplicate_agent"),
        ("container-b", bad_session, "invalid_id"),
        ("container-b", empty_role, "invalid_request"),
        ("container-b", bad_rig, "invalid_id"),
        ("container/b", a_registry(), "invalid_id"),
        ("container-b", too_many, "registry_too_large"),
    ];
    for (container, agents, code) in cases {
        let err = town.put_registry(container, agents).unwrap_err();
        assert_eq!(err.code(), code);
    }
    assert_eq!(town.get_registry(), kept);
    assert_eq!(town.events_of(log::REGISTRY_UPDATED).len(), 1);
}

#[test]
fn the_town_log_pages_like_an_agents_log() {
    let mut town = town_with_agents();
    for _ in 0..5 {
        town.dispatch("rig1", "polecat-1").expect("dispatch");
    }
    let first = town.read(0, 2).expect("page 1");
    assert_eq!(
        first.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(first.has_more);
    assert_eq!(
        (first.next_after, first.first_seq, first.last_seq),
        (2, 1, 5)
    );
    let rest = town.read(first.next_after, 10).expect("page 2");
    assert_eq!(
        rest.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [3, 4, 5]
    );
    assert!(!rest.has_more);
    assert_eq!(rest.next_after, 5);
    let beyond = town.read(9, 10).expect("past the end");
    assert!(beyond.events.is_empty());
    assert_eq!(beyond.next_after, 9);
    assert!(rest.events.iter().all(|e| e.created_at > 0));

    let max = u64::from(limits::MAX_READ_LIMIT);
    for limit in [0, max + 1] {
        assert_eq!(town.read(0, limit).unwrap_err().code(), "invalid_request");
    }
    assert!(town.read(0, max).is_ok());
}

#[test]
fn the_town_log_keeps_its_newest_events_and_expires_older_cursors() {
    let mut town = town_with_agents();
    // Seeded in one statement: ten thousand calls would take seconds in a
    // debug build. The calls after it run retention on the real path.
    town.store
        .run(
            "WITH RECURSIVE n(seq) AS (SELECT 1 UNION ALL SELECT seq + 1 FROM n WHERE seq < ?1)
             INSERT INTO town_events (seq, type, data, created_at)
             SELECT seq, 'dispatch_agent', '{}', 1 FROM n",
            stasis_domain::params![town::log::MAX_TOWN_EVENTS - 2],
        )
        .expect("seed");
    let total = town::log::MAX_TOWN_EVENTS + 5;
    for _ in 0..7 {
        town.dispatch("rig1", "polecat-1").expect("dispatch");
    }
    let err = town.read(0, 10).unwrap_err();
    assert_eq!(err, DomainError::CursorExpired { first_seq: 6 });
    assert!(matches!(
        town.read(4, 10),
        Err(DomainError::CursorExpired { .. })
    ));
    let page = town.read(5, 10).expect("read from the horizon");
    assert_eq!(page.first_seq, 6);
    assert_eq!(page.last_seq, total);
    assert_eq!(page.events[0].seq, 6);
    let seqs: Vec<u64> = town.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (6..=total).collect::<Vec<_>>(), "gapless");
}

#[test]
fn an_explicit_dispatch_is_refused_while_draining_and_for_unknown_agents() {
    let mut town = town_with_agents();
    let err = town.dispatch("rig1", "ghost").unwrap_err();
    assert!(matches!(err, DomainError::NotFound(_)));
    assert_eq!(err.code(), "agent_not_found");

    town.evict("container-a");
    let err = town.dispatch("rig1", "polecat-1").unwrap_err();
    assert!(matches!(err, DomainError::Unavailable(_)));
    assert_eq!(err.code(), "town_draining");
    assert!(town.events_of(log::DISPATCH_AGENT).is_empty());

    town.heartbeat("container-b");
    let dispatched = town.dispatch("rig1", "polecat-1").expect("dispatch");
    assert_eq!(dispatched, agent("rig1", "polecat-1", "polecat"));
    let event = &town.events_of(log::DISPATCH_AGENT)[0];
    assert_eq!(event.data["reason"], "requested");
    assert_eq!(event.data["agent_id"], "polecat-1");
}

#[test]
fn a_mayor_message_goes_to_a_live_session_in_the_current_container() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.put_registry("container-a", a_registry())
        .expect("registry");
    assert_eq!(
        town.mayor_message(3).expect("message"),
        MayorAction::Deliver {
            session_id: "ses-1".into(),
            container_id: "container-a".into(),
        }
    );
    assert!(town.events_of(log::DISPATCH_AGENT).is_empty());
}

#[test]
fn a_mayor_message_is_redispatched_without_a_live_session() {
    let mut town = town_with_agents();
    // No container yet.
    let expected = MayorAction::Redispatch {
        agent: agent("hq", "mayor", "mayor"),
    };
    assert_eq!(town.mayor_message(1).expect("message"), expected);

    // The registry belongs to another container than the current one.
    town.heartbeat("container-a");
    town.put_registry("container-old", a_registry())
        .expect("registry");
    assert_eq!(town.mayor_message(2).expect("message"), expected);

    // The current container runs the mayor without a session.
    let mut sessionless = a_registry();
    sessionless[0].session_id = None;
    town.put_registry("container-a", sessionless)
        .expect("registry");
    assert_eq!(town.mayor_message(3).expect("message"), expected);

    let dispatches = town.events_of(log::DISPATCH_AGENT);
    assert_eq!(dispatches.len(), 3);
    assert!(
        dispatches
            .iter()
            .all(|e| e.data["reason"] == "mayor_message")
    );
}

#[test]
fn deferred_mayor_messages_coalesce_into_one_release() {
    let mut town = town_with_agents();
    town.evict("container-a");
    for seq in 1..=3 {
        assert_eq!(
            town.mayor_message(seq).expect("message"),
            MayorAction::Deferred
        );
    }
    assert_eq!(town.events_of(log::DISPATCH_DEFERRED).len(), 3);
    let b = town.heartbeat("container-b");
    assert_eq!(b.released, vec![agent("hq", "mayor", "mayor")]);
    assert_eq!(released_reason_count(&mut town), 1);
}

#[test]
fn a_forgotten_agent_is_not_released() {
    let mut town = town_with_agents();
    town.evict("container-a");
    town.mayor_message(1).expect("message");
    let forget = TownCall::ForgetAgent {
        rig_id: "hq".into(),
        agent_id: "mayor".into(),
    };
    town.call(forget).expect("forget");
    assert!(town.heartbeat("container-b").released.is_empty());
}

#[test]
fn only_reads_are_not_writes() {
    let reads = [
        TownCall::GetState,
        TownCall::GetRegistry,
        TownCall::ReadEvents { after: 0, limit: 1 },
        TownCall::ListAgents,
    ];
    assert!(reads.iter().all(|call| !town::is_write(call)));
    let writes = [
        TownCall::Evict {
            container_id: "c".into(),
            reason: None,
        },
        TownCall::Heartbeat {
            container_id: "c".into(),
        },
        TownCall::PutRegistry {
            container_id: "c".into(),
            agents: vec![],
        },
        TownCall::RegisterAgent {
            rig_id: "r".into(),
            agent_id: "a".into(),
            role: "mayor".into(),
        },
        TownCall::ForgetAgent {
            rig_id: "r".into(),
            agent_id: "a".into(),
        },
        TownCall::MayorMessage { message_seq: 1 },
        TownCall::Dispatch {
            rig_id: "r".into(),
            agent_id: "a".into(),
        },
    ];
    assert!(writes.iter().all(town::is_write));
}

#[test]
fn calls_and_replies_survive_json_in_the_documented_shapes() {
    assert_eq!(
        json(&TownCall::GetState),
        serde_json::json!({"op": "get_state"})
    );
    let read: TownCall =
        serde_json::from_value(serde_json::json!({"op": "read_events", "args": {}}))
            .expect("defaults");
    assert_eq!(
        read,
        TownCall::ReadEvents {
            after: 0,
            limit: u64::from(limits::DEFAULT_READ_LIMIT)
        }
    );
    let put: TownCall = serde_json::from_value(serde_json::json!({
        "op": "put_registry",
        "args": {"container_id": "c", "agents": [{"agent_id": "a", "rig_id": "r", "role": "mayor"}]}
    }))
    .expect("optional session and port");
    assert!(matches!(put, TownCall::PutRegistry { ref agents, .. } if agents[0].port.is_none()));

    assert_eq!(
        json(&MayorAction::Deliver {
            session_id: "s".into(),
            container_id: "c".into()
        }),
        serde_json::json!({"action": "deliver", "session_id": "s", "container_id": "c"})
    );
    assert_eq!(
        json(&MayorAction::Deferred),
        serde_json::json!({"action": "deferred"})
    );

    let mut town = town_with_agents();
    let beat = json(&town.heartbeat("container-a"));
    assert_eq!(
        beat,
        serde_json::json!({
            "draining": false,
            "cleared_drain": false,
            "registry": {"container_id": null, "agents": [], "updated_at": null},
            "released": [],
        })
    );
    assert_eq!(
        json(&town.evict("container-a")),
        serde_json::json!({"draining": true, "evicting_container_id": "container-a", "already_draining": false})
    );
    assert_eq!(
        json(&town.state()),
        serde_json::json!({
            "draining": true,
            "evicting_container_id": "container-a",
            "current_container_id": "container-a",
            "last_heartbeat_at": town.now_ms - 2,
            "mayor": {"rig_id": "hq", "agent_id": "mayor"},
        })
    );
    let event = town.events().remove(0);
    let shown = json(&event);
    assert_eq!(shown["type"], "container_ready");
    assert_eq!(shown["data"]["container_id"], "container-a");
    assert!(shown["created_at"].is_i64());

    for call in [
        TownCall::GetState,
        TownCall::MayorMessage { message_seq: 9 },
        TownCall::Evict {
            container_id: "c".into(),
            reason: Some("r".into()),
        },
    ] {
        let text = serde_json::to_string(&call).expect("serializes");
        assert_eq!(
            serde_json::from_str::<TownCall>(&text).expect("parses"),
            call
        );
    }
    let reply = town.call(TownCall::Heartbeat {
        container_id: "container-a".into(),
    });
    assert!(matches!(&reply, Ok(TownReply::Heartbeat(beat)) if beat.evicted));
    assert_eq!(
        json(&reply.clone().expect("heartbeat"))["args"]["evicted"],
        true
    );
    let reply = reply.expect("heartbeat");
    let text = serde_json::to_string(&reply).expect("serializes");
    assert_eq!(
        serde_json::from_str::<TownReply>(&text).expect("parses"),
        reply
    );
}

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("serializes")
}

/// One step of a random run.
#[derive(Debug, Clone)]
enum Step {
    Evict(usize),
    Heartbeat(usize),
    MayorMessage,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..4usize).prop_map(Step::Evict),
        (0..4usize).prop_map(Step::Heartbeat),
        Just(Step::MayorMessage),
    ]
}

const CONTAINERS: [&str; 4] = ["c0", "c1", "c2", "c3"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn only_a_never_evicted_container_ends_a_drain_and_releases_exactly_once(
        steps in proptest::collection::vec(step(), 1..60)
    ) {
        let mut town = town_with_agents();
        let mut evicted = std::collections::BTreeSet::new();
        let mut deferred_pending = false;
        let mut expected_releases = 0;
        for step in steps {
            let before = town.state();
            match step {
                Step::Evict(i) => {
                    // A container evicted before and since replaced
                    // repeats itself: no new drain.
                    let drains = before.draining || !evicted.contains(&i);
                    prop_assert_eq!(town.evict(CONTAINERS[i]).draining, drains);
                    prop_assert_eq!(town.state().draining, drains);
                    evicted.insert(i);
                }
                Step::Heartbeat(i) => {
                    let beat = town.heartbeat(CONTAINERS[i]);
                    let should_clear = before.draining && !evicted.contains(&i);
                    prop_assert_eq!(beat.cleared_drain, should_clear);
                    if beat.cleared_drain {
                        prop_assert_ne!(before.evicting_container_id.as_deref(), Some(CONTAINERS[i]));
                    }
                    let release_now = should_clear && deferred_pending;
                    prop_assert_eq!(beat.released.len(), usize::from(release_now));
                    if should_clear {
                        expected_releases += usize::from(deferred_pending);
                        deferred_pending = false;
                    }
                }
                Step::MayorMessage => {
                    let action = town.mayor_message(1).expect("message");
                    prop_assert_eq!(action == MayorAction::Deferred, before.draining);
                    deferred_pending |= before.draining;
                }
            }
            let after = town.state();
            if before.draining && !after.draining {
                prop_assert!(matches!(step, Step::Heartbeat(i) if !evicted.contains(&i)));
            }
        }
        prop_assert_eq!(released_reason_count(&mut town), expected_releases);
    }
}
