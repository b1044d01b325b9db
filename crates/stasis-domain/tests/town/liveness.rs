//! Liveness: the current container is alive while it heartbeats; a message
//! goes into a session only then, and a fenced heartbeat (a superseded or
//! an evicted container's) changes nothing, its time included. Per-agent
//! registry entries and any agent's inbox follow the same rules.

use crate::support::{a_registry, agent, running, town_with_agents};
use stasis_domain::town::{DEFAULT_LIVENESS_TIMEOUT_MS, MayorAction, log};

const TIMEOUT: i64 = DEFAULT_LIVENESS_TIMEOUT_MS as i64;

#[test]
fn a_message_for_a_dead_containers_session_is_redispatched() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.put_registry("container-a", a_registry())
        .expect("registry");
    assert!(matches!(
        town.mayor_message(1).expect("message"),
        MayorAction::Deliver { .. }
    ));
    let state = town.state();
    assert!(state.container_alive(town.now_ms, DEFAULT_LIVENESS_TIMEOUT_MS));

    town.now_ms += TIMEOUT + 1;
    assert!(
        !town
            .state()
            .container_alive(town.now_ms, DEFAULT_LIVENESS_TIMEOUT_MS)
    );
    assert_eq!(
        town.mayor_message(2).expect("message"),
        MayorAction::Redispatch {
            agent: agent("hq", "mayor", "mayor")
        }
    );
    assert_eq!(town.events_of(log::DISPATCH_AGENT).len(), 1);

    town.heartbeat("container-a");
    assert!(matches!(
        town.mayor_message(3).expect("message"),
        MayorAction::Deliver { .. }
    ));
}

#[test]
fn a_fenced_heartbeat_changes_nothing_its_time_included() {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    let before = town.state();
    let late = town.heartbeat("container-a");
    assert_eq!(late.superseded_by.as_deref(), Some("container-b"));
    assert_eq!(town.state(), before, "a superseded container's heartbeat");

    town.evict("container-b");
    let draining = town.state();
    let late = town.heartbeat("container-b");
    assert!(late.evicted);
    assert_eq!(town.state(), draining, "the evicted container's heartbeat");

    // A zombie's heartbeats do not keep the dead town alive.
    town.now_ms += TIMEOUT + 1;
    town.heartbeat("container-a");
    town.heartbeat("container-b");
    assert!(
        !town
            .state()
            .container_alive(town.now_ms, DEFAULT_LIVENESS_TIMEOUT_MS)
    );
}

#[test]
fn any_agents_inbox_routes_like_the_mayors() {
    let mut town = town_with_agents();
    let polecat = agent("rig1", "polecat-1", "polecat");
    assert_eq!(
        town.agent_message("rig1", "polecat-1", 1).expect("message"),
        MayorAction::Redispatch {
            agent: polecat.clone()
        }
    );
    // A retry of the same message records nothing more.
    town.agent_message("rig1", "polecat-1", 1).expect("retry");
    assert_eq!(town.events_of(log::AGENT_MESSAGE).len(), 1);
    assert_eq!(town.events_of(log::MAYOR_MESSAGE).len(), 0);
    let dispatches = town.events_of(log::DISPATCH_AGENT);
    assert_eq!(dispatches.len(), 1);
    assert_eq!(dispatches[0].data["reason"], "agent_message");

    town.heartbeat("container-a");
    let mut registry = a_registry();
    registry[1].session_id = Some("ses-p1".into());
    town.put_registry("container-a", registry)
        .expect("registry");
    assert_eq!(
        town.agent_message("rig1", "polecat-1", 2).expect("message"),
        MayorAction::Deliver {
            session_id: "ses-p1".into(),
            container_id: "container-a".into()
        }
    );
    town.evict("container-a");
    assert_eq!(
        town.agent_message("rig1", "polecat-1", 3).expect("message"),
        MayorAction::Deferred
    );
    assert_eq!(town.heartbeat("container-b").released, vec![polecat]);

    let err = town.agent_message("rig1", "ghost", 4).unwrap_err();
    assert_eq!(err.code(), "agent_not_found");
    // The mayor's inbox is the mayor's message.
    town.agent_message("hq", "mayor", 5).expect("message");
    assert_eq!(town.events_of(log::MAYOR_MESSAGE).len(), 1);
}

#[test]
fn one_agents_registry_entry_keeps_the_others() {
    let mut town = town_with_agents();
    town.put_registry("container-a", a_registry())
        .expect("registry");
    let extra = running("rig2", "refinery", "refinery", Some("ses-r"));
    let added = town
        .put_registry_agent("container-a", extra.clone())
        .expect("entry");
    assert_eq!(added.agents.len(), 4);
    assert_eq!(added.agents[..3], a_registry()[..]);
    assert_eq!(added.agents[3], extra);

    let moved_mayor = running("hq", "mayor", "mayor", Some("ses-new"));
    let moved = town
        .put_registry_agent("container-b", moved_mayor.clone())
        .expect("entry");
    assert_eq!(moved.container_id.as_deref(), Some("container-b"));
    assert_eq!(moved.agents[0], moved_mayor);
    assert!(
        moved.agents[1..]
            .iter()
            .all(|a| a.session_id.is_none() && a.port.is_none()),
        "{moved:?}"
    );
    assert_eq!(moved.agents.len(), 4);

    let removed = town.remove_registry_agent("rig2", "refinery");
    assert_eq!(removed.agents.len(), 3);
    let events = town.events_of(log::REGISTRY_UPDATED).len();
    assert_eq!(town.remove_registry_agent("rig2", "refinery"), removed);
    assert_eq!(town.events_of(log::REGISTRY_UPDATED).len(), events);
    assert_eq!(town.get_registry(), removed);

    let mut bad = extra;
    bad.role = String::new();
    assert!(town.put_registry_agent("container-b", bad).is_err());
    assert_eq!(town.get_registry(), removed);
}
