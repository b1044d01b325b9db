//! Retries after a failure: a clearing heartbeat retried with its
//! idempotency key gets the same released dispatches again, and a Mayor
//! message routed twice (the same seq of the mayor's log) is recorded and
//! deferred once.

use crate::support::{a_registry, agent, released_reason_count, town_with_agents};
use stasis_domain::town::{MayorAction, log};

fn drained_town_with_a_deferred_message() -> crate::support::Town {
    let mut town = town_with_agents();
    town.heartbeat("container-a");
    town.put_registry("container-a", a_registry())
        .expect("registry");
    town.evict("container-a");
    assert_eq!(
        town.mayor_message(7).expect("message"),
        MayorAction::Deferred
    );
    town
}

#[test]
fn a_clearing_heartbeat_retried_with_its_key_releases_the_same_dispatches_again() {
    let mut town = drained_town_with_a_deferred_message();
    let first = town.heartbeat_with_key("container-b", Some("boot-1"));
    assert!(first.cleared_drain);
    assert_eq!(first.released, vec![agent("hq", "mayor", "mayor")]);

    let retry = town.heartbeat_with_key("container-b", Some("boot-1"));
    assert_eq!(retry.released, first.released, "the answer is replayed");
    assert!(!retry.cleared_drain && !retry.draining);
    assert_eq!(
        released_reason_count(&mut town),
        1,
        "released once in the log"
    );

    let next = town.heartbeat_with_key("container-b", Some("beat-2"));
    assert!(next.released.is_empty(), "a new key is a new heartbeat");
    assert!(town.heartbeat("container-b").released.is_empty());
}

#[test]
fn a_key_belongs_to_its_container() {
    let mut town = drained_town_with_a_deferred_message();
    town.heartbeat_with_key("container-b", Some("k"));
    let other = town.heartbeat_with_key("container-c", Some("k"));
    assert!(other.released.is_empty());
    assert_eq!(
        town.state().current_container_id.as_deref(),
        Some("container-c"),
        "container-c's heartbeat is its own, not a replay of b's"
    );
}

#[test]
fn a_replayed_heartbeat_refreshes_liveness_and_changes_nothing_else() {
    let mut town = drained_town_with_a_deferred_message();
    town.heartbeat_with_key("container-b", Some("k"));
    let events_before = town.events().len();
    let before = town.state().last_heartbeat_at;
    town.heartbeat_with_key("container-b", Some("k"));
    assert!(town.state().last_heartbeat_at > before);
    assert_eq!(town.events().len(), events_before);
}

#[test]
fn a_mayor_message_routed_twice_is_recorded_and_deferred_once() {
    let mut town = drained_town_with_a_deferred_message();
    assert_eq!(town.mayor_message(7).expect("retry"), MayorAction::Deferred);
    assert_eq!(town.events_of(log::MAYOR_MESSAGE).len(), 1);
    assert_eq!(town.events_of(log::DISPATCH_DEFERRED).len(), 1);

    let b = town.heartbeat("container-b");
    assert_eq!(b.released.len(), 1);
    let MayorAction::Redispatch { .. } = town.mayor_message(7).expect("late retry") else {
        panic!("a routed message is routed again the same way");
    };
    assert_eq!(
        town.events_of(log::DISPATCH_AGENT).len(),
        1,
        "only the release; the retry recorded no dispatch"
    );
    assert!(matches!(
        town.mayor_message(8).expect("a new message"),
        MayorAction::Redispatch { .. }
    ));
    assert_eq!(town.events_of(log::MAYOR_MESSAGE).len(), 2);
}

#[test]
fn replays_are_bounded() {
    let mut town = town_with_agents();
    for beat in 0..150 {
        town.heartbeat_with_key("container-a", Some(&format!("k{beat}")));
    }
    // The oldest keys are forgotten: replaying one is a new heartbeat,
    // which is harmless (nothing to release).
    assert!(
        town.heartbeat_with_key("container-a", Some("k0"))
            .released
            .is_empty()
    );
}

#[test]
fn an_eviction_naming_no_container_evicts_the_current_one() {
    let mut town = town_with_agents();
    let refused = town.call(stasis_domain::town::TownCall::Evict {
        container_id: None,
        reason: None,
    });
    assert_eq!(
        refused.map(|_| ()).map_err(|e| e.code().to_owned()),
        Err("no_current_container".to_owned()),
        "nothing has heartbeat yet"
    );
    assert!(!town.state().draining);

    town.heartbeat("container-a");
    let evicted = town.call(stasis_domain::town::TownCall::Evict {
        container_id: None,
        reason: None,
    });
    assert!(evicted.is_ok());
    let state = town.state();
    assert!(state.draining);
    assert_eq!(state.evicting_container_id.as_deref(), Some("container-a"));
    let late = town.heartbeat("container-a");
    assert!(
        late.evicted && late.draining,
        "a's late heartbeat ends nothing"
    );
}
