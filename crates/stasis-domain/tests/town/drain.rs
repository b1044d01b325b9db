//! Eviction and heartbeats: when a drain starts, and who may end it.

use crate::support::Town;
use stasis_domain::town::{self, TownCall, TownState, log};

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
            container_id: Some(bad.into()),
            reason: None,
        };
        assert_eq!(town.call(evict).unwrap_err().code(), "invalid_id");
        let beat = TownCall::Heartbeat {
            container_id: bad.into(),
            idempotency_key: None,
        };
        assert_eq!(town.call(beat).unwrap_err().code(), "invalid_id");
    }
    let long = TownCall::Evict {
        container_id: Some("container-a".into()),
        reason: Some("x".repeat(town::eviction::MAX_REASON_BYTES + 1)),
    };
    assert_eq!(town.call(long).unwrap_err().code(), "invalid_request");
    assert!(!town.state().draining);
}
