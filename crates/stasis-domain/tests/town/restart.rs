//! The spec scenario end to end: a container restart loses no work.

use crate::support::{a_registry, agent, released_reason_count, town_with_agents};
use stasis_domain::town::{AgentRef, MayorAction, log};

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
