//! Agent registration: one mayor per town, forgetting, listing, refusals.

use crate::support::{Town, agent, town_with_agents};
use stasis_domain::DomainError;
use stasis_domain::town::{TownCall, TownReply};

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
