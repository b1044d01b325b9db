//! b. boot after an eviction, and after a crash (no eviction: nothing deferred).

use std::path::Path;

use serde_json::Value;
use stasis_client::boot::{
    BootOptions, BootReport, DispatchRequest, Hydration, boot, kilo_db_path,
};
use stasis_client::credentials::{TokenClaims, token_file};
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
        chunk_cache: None,
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
    // After a clean drain the polecats' last snapshots cover their whole
    // conversations: their kilo.db is enough. The refinery had none.
    assert_eq!(
        requested_agents(&report),
        ["refinery"],
        "only the agent whose kilo.db is not enough gets a dispatch"
    );
    let not_needed: Vec<&str> = report
        .not_needed
        .iter()
        .map(|a| a.agent_id.as_str())
        .collect();
    assert_eq!(not_needed, ["polecat-1", "polecat-2"]);
    assert_eq!(report.dispatches().len(), 2);
}

#[test]
fn after_a_crash_boot_requests_the_mayors_dispatch_with_its_checkpoint_and_conversation() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let (root_a, root_b) = (
        tempfile::tempdir().expect("a"),
        tempfile::tempdir().expect("b"),
    );
    // Container A runs, then dies with kill -9: no eviction, nothing deferred.
    let town = container_a_runs(&server, "e2e-boot-crash", root_a.path());

    let options = BootOptions {
        container_id: town::new_container_id(),
        root: root_b.path().to_owned(),
        progress: false,
        chunk_cache: None,
    };
    let report = boot(&client(&server), town.name, &options, &mut |_| {}).expect("boot");

    assert!(report.complete(), "{report:?}");
    assert!(!report.cleared_drain && !report.draining);
    assert!(
        report.pending_dispatches.is_empty(),
        "no drain, nothing deferred"
    );
    assert_eq!(
        requested_agents(&report),
        ["mayor", "polecat-1", "polecat-2", "refinery"]
    );
    let dispatches = report.dispatches();
    let mayor: &Value = &dispatches[0];
    assert_eq!(
        (mayor["agent_id"].as_str(), mayor["role"].as_str()),
        (Some("mayor"), Some("mayor"))
    );
    assert_eq!(mayor["checkpoint"], town.checkpoint);
    let turns: Vec<(&str, &str)> = mayor["prior_conversation"]["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| {
            (
                t["role"].as_str().unwrap_or(""),
                t["content"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        turns,
        [
            ("user", "plan the release"),
            ("assistant", "three polecats, one refinery")
        ]
    );
    let mayor_sha = town.receipts[0].as_ref().map(|r| r.sha256.as_str());
    assert_eq!(mayor["snapshot"]["sha256"].as_str(), mayor_sha);

    // The town's log records each request.
    let (_, log) = call(
        &server,
        "GET",
        &format!("/api/towns/{}/events?after=0&limit=100", town.name),
        None,
    );
    let dispatch_events = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "dispatch_agent")
        .count();
    assert_eq!(
        dispatch_events,
        MEMBERS.len(),
        "one dispatch_agent event per request"
    );
}

/// The agents `report` requested a dispatch for, each of which came.
#[test]
fn one_client_boots_two_containers_in_turn_each_with_a_container_token_of_its_own() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let root = tempfile::tempdir().expect("root");
    let client = client(&server);
    let town = "e2e-rebind";
    for container in ["c-first", "c-second"] {
        let options = BootOptions {
            container_id: container.to_owned(),
            root: root.path().to_owned(),
            progress: false,
            chunk_cache: None,
        };
        boot(&client, town, &options, &mut |_| {}).expect("boot");
        let file = token_file(root.path(), container);
        let token = std::fs::read_to_string(&file).expect("boot wrote the token file");
        let claims = TokenClaims::of(token.trim()).expect("a JWT");
        assert!(claims.binds(town, container), "{claims:?}");
    }
    let (_, state) = call(&server, "GET", &format!("/api/towns/{town}"), None);
    assert_eq!(state["current_container_id"], "c-second");
}

fn requested_agents(report: &BootReport) -> Vec<&str> {
    report
        .requested_dispatches
        .iter()
        .map(|a| {
            assert!(
                matches!(a.result, DispatchRequest::Dispatched(_)),
                "{}: {:?}",
                a.agent.agent_id,
                a.result
            );
            a.agent.agent_id.as_str()
        })
        .collect()
}

/// kilo.db files under a root.
fn hydrated_files(root: &Path) -> usize {
    entries(root)
        .iter()
        .filter(|home| kilo_db_path(root, home.trim_start_matches("agent-home-")).is_file())
        .count()
}

/// The container flow as documented: each container is started with a bootstrap token of its
/// own, which boot exchanges for a container token (kept in the token file); the bootstrap
/// token then mints nothing for any other container, and once a successor has booted, the
/// first container's writes are fenced.
#[test]
fn boot_exchanges_a_bootstrap_token_once_and_leaves_the_container_only_fenced_tokens() {
    use stasis_api::auth::Scope;
    use stasis_client::{Client, Config, Error};
    use std::time::Duration;

    let data = tempfile::tempdir().expect("temp dir");
    let server = start_server(data.path());
    let root = tempfile::tempdir().expect("root");
    let town = "e2e-bootstrap";
    let bootstrap = |token_id: &str| {
        let scope = Scope::Bootstrap {
            town: town.into(),
            token_id: token_id.into(),
        };
        crate::support::mint(scope, Duration::from_secs(3600))
    };
    let started_with =
        |token: String| Client::new(Config::new(&server.base, Some(token)).expect("config"));
    let options = |container: &str| BootOptions {
        container_id: container.to_owned(),
        root: root.path().to_owned(),
        progress: false,
        chunk_cache: None,
    };
    let reason = |error: &Error| match error.root() {
        Error::Api {
            status,
            detail: Some(detail),
            ..
        } => (*status, detail["reason"].as_str().map(str::to_owned)),
        other => panic!("expected a refusal, got {other:?}"),
    };

    let token_a = bootstrap("jti-a");
    let a = started_with(token_a.clone());
    boot(&a, town, &options("c-a"), &mut |_| {}).expect("A boots");
    let held = std::fs::read_to_string(token_file(root.path(), "c-a")).expect("token file");
    let claims = TokenClaims::of(held.trim()).expect("a JWT");
    assert!(claims.binds(town, "c-a"), "{claims:?}");
    assert_eq!(claims.lifetime(), Duration::from_secs(86_400));

    // A zombie keeping its bootstrap token cannot boot a fresh container with it.
    let reused = boot(
        &started_with(token_a),
        town,
        &options("c-fresh"),
        &mut |_| {},
    );
    let error = reused.expect_err("a spent bootstrap token mints nothing");
    assert_eq!(reason(&error), (403, Some("bootstrap_spent".into())));
    assert!(!token_file(root.path(), "c-fresh").exists());

    boot(
        &started_with(bootstrap("jti-b")),
        town,
        &options("c-b"),
        &mut |_| {},
    )
    .expect("B boots");
    let (_, state) = call(&server, "GET", &format!("/api/towns/{town}"), None);
    assert_eq!(state["current_container_id"], "c-b");

    // A's own client, bound with the container token boot gave it: fenced.
    let events = format!("/api/towns/{town}/rigs/hq/agents/mayor/events");
    let body = serde_json::json!({"events": [{"type": "x", "session_id": "s"}]});
    let write = a.post_json::<Value>(&events, &body, None);
    let error = write.expect_err("a superseded container writes nothing");
    assert_eq!(error.code(), Some("container_fenced"), "{error}");
}
