//! The registry: a put replaces it whole; an invalid one changes nothing.

use crate::support::{Town, a_registry, running};
use stasis_domain::town::{self, RegistryAgent, log};

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
