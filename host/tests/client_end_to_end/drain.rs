//! c. drain within a budget.

use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::json;
use stasis_client::AgentRef;
use stasis_client::boot::{BootOptions, boot, kilo_db_path};
use stasis_client::drain::{DrainOptions, Flush, drain};
use stasis_client::snapshot::{self, PullOptions};
use stasis_client::town::{self, RegisteredAgent};

use crate::helpers::{
    append_rows, assert_consistent_prefix, call, client, create_db, head_snapshot, max_id,
    start_server,
};
use crate::town_fixture::{MEMBERS, container_a_is_evicted, container_a_runs};

#[test]
fn drain_records_the_eviction_and_flushes_every_agents_newer_kilo_db() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let (root_a, root_b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let town = container_a_runs(&server, "e2e-drain", root_a.path());
    container_a_is_evicted(&server, &town, "hello again");
    let container_b = town::new_container_id();
    let options = BootOptions {
        container_id: container_b.clone(),
        root: root_b.path().to_owned(),
        progress: false,
        chunk_cache: None,
    };
    boot(&client(&server), town.name, &options, &mut |_| {}).expect("B boots");

    // B's agents work: each kilo.db grows, and the refinery writes its first one. B never
    // registered its own registry: the one it booted from (A's) names its agents.
    for member in &MEMBERS[..3] {
        append_rows(&kilo_db_path(root_b.path(), member.agent_id), 25);
    }
    create_db(&kilo_db_path(root_b.path(), "refinery"), 40, "wal");

    let drained = DrainOptions {
        container_id: container_b.clone(),
        root: root_b.path().to_owned(),
        budget: Duration::from_secs(120),
        reason: "sigterm".into(),
        parallel: 2,
    };
    let report = drain(&client(&server), town.name, &drained, &|_| {}).expect("drain");

    assert!(report.complete(), "{report:?}");
    let (_, state) = call(&server, "GET", &format!("/api/towns/{}", town.name), None);
    assert_eq!(state["draining"], json!(true));
    assert_eq!(
        state["evicting_container_id"].as_str(),
        Some(container_b.as_str())
    );
    let order: Vec<&str> = report
        .agents
        .iter()
        .map(|a| a.agent.agent_id.as_str())
        .collect();
    assert_eq!(order, ["mayor", "polecat-1", "polecat-2", "refinery"]);
    for (outcome, before) in report.agents.iter().zip(&town.receipts) {
        let Flush::Flushed(receipt) = &outcome.result else {
            panic!(
                "{} not flushed: {:?}",
                outcome.agent.agent_id, outcome.result
            )
        };
        let expected_version = before.as_ref().map_or(1, |r| r.version + 1);
        assert_eq!(
            receipt.version, expected_version,
            "{}",
            outcome.agent.agent_id
        );
        let who =
            AgentRef::new(town.name, &outcome.agent.rig_id, &outcome.agent.agent_id).expect("ids");
        let (_, server_sha) = head_snapshot(&server, &who);
        assert_eq!(server_sha.as_deref(), Some(receipt.sha256.as_str()));
        let back = root_a
            .path()
            .join(format!("check-{}.db", outcome.agent.agent_id));
        snapshot::pull(&client(&server), &who, &back, &PullOptions::default()).expect("pull");
        let local = Connection::open(&outcome.path).expect("local");
        assert_eq!(assert_consistent_prefix(&back), max_id(&local));
    }
}

#[test]
fn a_drain_reports_out_of_time_for_what_its_budget_could_not_flush() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let root = tempfile::tempdir().expect("root");
    let client = client(&server);
    let name = "e2e-budget";
    let container = town::new_container_id();
    town::heartbeat(&client, name, &container, None).expect("heartbeat");
    let agents: Vec<RegisteredAgent> = [("mayor", "mayor"), ("polecat-1", "polecat")]
        .into_iter()
        .map(|(id, role)| RegisteredAgent {
            agent_id: id.into(),
            rig_id: "main".into(),
            role: role.into(),
            session_id: None,
            port: None,
        })
        .collect();
    town::put_registry(&client, name, &container, &agents, None).expect("registry");
    // The Mayor's database is locked by a writer that never lets go within the budget.
    let mayor_db = kilo_db_path(root.path(), "mayor");
    create_db(&mayor_db, 200, "delete");
    create_db(&kilo_db_path(root.path(), "polecat-1"), 200, "wal");
    let holder = Connection::open(&mayor_db).expect("holder");
    holder
        .execute_batch("BEGIN EXCLUSIVE")
        .expect("exclusive lock");

    let budget = Duration::from_secs(3);
    let options = DrainOptions {
        container_id: container.clone(),
        root: root.path().to_owned(),
        budget,
        reason: "sigterm".into(),
        parallel: 2,
    };
    let started = Instant::now();
    let report = drain(&client, name, &options, &|_| {}).expect("drain");
    let took = started.elapsed();
    holder.execute_batch("ROLLBACK").expect("release");

    assert!(
        took < budget + Duration::from_secs(3),
        "the budget bounds the drain: {took:?}"
    );
    assert!(!report.complete());
    assert!(report.eviction_error.is_none());
    assert!(
        matches!(report.agents[0].result, Flush::OutOfTime),
        "{:?}",
        report.agents[0]
    );
    assert!(
        matches!(report.agents[1].result, Flush::Flushed(_)),
        "{:?}",
        report.agents[1]
    );
    let mayor = AgentRef::new(name, "main", "mayor").expect("ids");
    assert_eq!(head_snapshot(&server, &mayor).0, 404, "nothing half-stored");
    let (_, state) = call(&server, "GET", &format!("/api/towns/{name}"), None);
    assert_eq!(state["draining"], json!(true));
}
