//! b. boot after an eviction.

use std::path::Path;

use stasis_client::boot::{BootOptions, Hydration, boot, kilo_db_path};
use stasis_client::town;

use crate::helpers::{
    assert_consistent_prefix, call, client, entries, rows_for, sha256_file, start_server,
};
use crate::town_fixture::{MEMBERS, container_a_is_evicted, container_a_runs};

#[test]
fn boot_hydrates_every_registered_agent_byte_identical_and_hands_over_the_deferred_dispatch() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let (root_a, root_b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    let town = container_a_runs(&server, "e2e-boot", root_a.path());
    let gap = "are you still there after the restart?";
    container_a_is_evicted(&server, &town, gap);

    let options = BootOptions {
        container_id: town::new_container_id(),
        root: root_b.path().to_owned(),
        progress: false,
    };
    let mut seen = Vec::new();
    let report = boot(&client(&server), town.name, &options, &mut |outcome| {
        seen.push(outcome.agent.agent_id.clone());
    })
    .expect("boot");

    assert!(report.cleared_drain && !report.draining);
    assert!(report.complete());
    assert_eq!(seen, ["mayor", "polecat-1", "polecat-2", "refinery"]);
    for ((member, outcome), receipt) in MEMBERS.iter().zip(&report.agents).zip(&town.receipts) {
        let path = kilo_db_path(root_b.path(), member.agent_id);
        assert_eq!(outcome.path, path);
        match (&outcome.result, receipt) {
            (Hydration::Pulled(pulled), Some(receipt)) => {
                assert_eq!(
                    sha256_file(&path),
                    receipt.sha256,
                    "{} byte-identical",
                    member.agent_id
                );
                assert_eq!((pulled.version, pulled.size), (Some(1), receipt.size));
                let rows = assert_consistent_prefix(&path);
                assert_eq!(rows, rows_for(member.db_bytes.expect("a db")));
            }
            (Hydration::NoSnapshot, None) => assert!(!path.exists(), "{}", member.agent_id),
            (other, _) => panic!("{}: unexpected {other:?}", member.agent_id),
        }
    }
    assert_eq!(
        hydrated_files(root_b.path()),
        3,
        "exactly the three with a snapshot"
    );

    let [dispatch] = &report.pending_dispatches[..] else {
        panic!("one dispatch, the Mayor's: {:?}", report.pending_dispatches)
    };
    assert_eq!(
        (dispatch["agent_id"].as_str(), dispatch["role"].as_str()),
        (Some("mayor"), Some("mayor"))
    );
    assert_eq!(dispatch["checkpoint"], town.checkpoint);
    let prompt = dispatch["prompt"].as_str().expect("a prompt");
    assert!(
        prompt.contains("plan the release") && prompt.ends_with(gap),
        "{prompt}"
    );
    let mayor_sha = town.receipts[0].as_ref().map(|r| r.sha256.as_str());
    assert_eq!(dispatch["snapshot"]["sha256"].as_str(), mayor_sha);
    let (_, state) = call(&server, "GET", &format!("/api/towns/{}", town.name), None);
    assert_eq!(
        state["current_container_id"].as_str(),
        Some(options.container_id.as_str())
    );
}

/// kilo.db files under a root.
fn hydrated_files(root: &Path) -> usize {
    entries(root)
        .iter()
        .filter(|home| kilo_db_path(root, home.trim_start_matches("agent-home-")).is_file())
        .count()
}
