//! Dispatch: explicit dispatches, mayor messages, and deferred releases.

use crate::support::{a_registry, agent, released_reason_count, town_with_agents};
use stasis_domain::DomainError;
use stasis_domain::town::{MayorAction, TownCall, log};

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
