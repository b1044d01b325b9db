//! Random runs: only a container never evicted nor superseded ends a drain,
//! releasing once; a superseded container never becomes current again.

use crate::support::{released_reason_count, town_with_agents};
use proptest::prelude::*;
use stasis_domain::town::MayorAction;

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
    fn only_a_never_evicted_never_superseded_container_ends_a_drain_and_releases_once(
        steps in proptest::collection::vec(step(), 1..60)
    ) {
        let mut town = town_with_agents();
        let mut evicted = std::collections::BTreeSet::new();
        // Containers that held the town, and the one holding it now.
        let mut held = std::collections::BTreeSet::new();
        let mut current: Option<usize> = None;
        let mut deferred_pending = false;
        let mut expected_releases = 0;
        // Each message is a new one in the mayor's log; a repeated seq
        // would be a retry of the same message.
        let mut message_seq = 0;
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
                    let superseded = held.contains(&i) && current != Some(i);
                    let blocked = evicted.contains(&i) || superseded;
                    prop_assert_eq!(beat.superseded_by.is_some(), superseded);
                    if !blocked && current != Some(i) {
                        current = Some(i);
                        held.insert(i);
                    }
                    let holder = town.state().current_container_id;
                    prop_assert_eq!(holder.as_deref(), current.map(|c| CONTAINERS[c]));
                    let should_clear = before.draining && !blocked;
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
                    message_seq += 1;
                    let action = town.mayor_message(message_seq).expect("message");
                    prop_assert_eq!(action == MayorAction::Deferred, before.draining);
                    deferred_pending |= before.draining;
                }
            }
            let after = town.state();
            if before.draining && !after.draining {
                prop_assert!(matches!(step, Step::Heartbeat(i) if !evicted.contains(&i)));
                prop_assert_eq!(after.current_container_id.as_deref(), current.map(|c| CONTAINERS[c]));
            }
        }
        prop_assert_eq!(released_reason_count(&mut town), expected_releases);
    }
}
