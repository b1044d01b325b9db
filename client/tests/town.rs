//! `boot` and `drain` against a mock of the town endpoints, following docs/http-api.md. The
//! run against the real server is host/tests/client_end_to_end/.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::Digest;
use stasis_client::boot::{
    BootOptions, BootReport, DispatchRequest, Hydration, boot, kilo_db_path,
};
use stasis_client::drain::{DrainOptions, Flush, drain};
use stasis_client::{Error, exit};
use support::{Mock, Request, Response, sample_db};

fn registry(container: &str) -> serde_json::Value {
    json!({"container_id": container, "agents": [
        {"agent_id": "polecat-1", "rig_id": "main", "role": "polecat", "session_id": "s2", "port": 4101},
        {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "s1", "port": 4100},
        {"agent_id": "polecat-2", "rig_id": "main", "role": "polecat", "session_id": null, "port": null},
    ]})
}

/// `GET /api/towns/t1` with `current` as the current container.
fn town_state(current: Option<&str>) -> Response {
    Response::json(
        200,
        &json!({"town_id": "t1", "draining": false, "evicting_container_id": null,
                "current_container_id": current, "last_heartbeat_at": null, "mayor": null}),
    )
}

/// The answer to `POST .../rigs/{rig}/agents/{agent}/dispatch`: a dispatch naming the agent.
fn dispatch_answer(request: &Request) -> Response {
    let parts: Vec<&str> = request.path().split('/').collect();
    let (rig, agent) = (parts[5], parts[7]);
    Response::json(
        200,
        &json!({"dispatch": {"agent_id": agent, "rig_id": rig, "prompt": format!("resume {agent}")}}),
    )
}

fn is_dispatch_request(request: &Request) -> bool {
    request.method == "POST" && request.path().ends_with("/dispatch")
}

/// The agents `report` requested a dispatch for, with the rig.
fn requested(report: &BootReport) -> Vec<(String, String)> {
    report
        .requested_dispatches
        .iter()
        .map(|a| (a.agent.rig_id.clone(), a.agent.agent_id.clone()))
        .collect()
}

fn boot_options(root: &Path) -> BootOptions {
    BootOptions {
        container_id: "c-new".into(),
        root: root.to_owned(),
        progress: false,
        chunk_cache: None,
    }
}

fn sha_of(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn boot_heartbeats_then_hydrates_every_registered_agent() {
    let src = tempfile::tempdir().expect("tempdir");
    let (_, mayor_db, mayor_sha) = sample_db(src.path(), "mayor.db", 80);
    let (_, polecat_db, polecat_sha) = sample_db(src.path(), "polecat.db", 30);
    let (mayor, polecat) = (
        (mayor_db.clone(), mayor_sha),
        (polecat_db.clone(), polecat_sha),
    );
    let mock = Mock::old_server(move |request: &Request| {
        match (request.method.as_str(), request.path()) {
            ("POST", "/api/towns/t1/heartbeat") => Response::json(
                200,
                &json!({"draining": false, "cleared_drain": true, "registry": registry("c-old"),
                    "pending_dispatches": [{"agent_id": "mayor", "prompt": "hi"}]}),
            ),
            ("GET", "/api/towns/t1/rigs/hq/agents/mayor/db-snapshot") => Response::new(200)
                .header("X-Stasis-Sha256", &mayor.1)
                .header("X-Stasis-Snapshot-Version", "5")
                .body(mayor.0.clone()),
            ("GET", "/api/towns/t1/rigs/main/agents/polecat-1/db-snapshot") => Response::new(200)
                .header("X-Stasis-Sha256", &polecat.1)
                .header("X-Stasis-Snapshot-Version", "2")
                .body(polecat.0.clone()),
            ("POST", path) if path.ends_with("/dispatch") => dispatch_answer(request),
            _ => Response::error(404, "snapshot_not_found", "the agent has no snapshot"),
        }
    });
    let root = tempfile::tempdir().expect("tempdir");
    let options = BootOptions {
        container_id: "c-new".into(),
        root: root.path().to_owned(),
        progress: false,
        chunk_cache: None,
    };
    let mut seen = Vec::new();
    let report = boot(&mock.client(), "t1", &options, &mut |outcome| {
        seen.push(outcome.agent.agent_id.clone());
    })
    .expect("boot");

    assert_eq!(seen, ["polecat-1", "mayor", "polecat-2"]);
    assert!(report.cleared_drain && !report.draining);
    assert!(report.complete());
    assert_eq!(
        report.pending_dispatches,
        [json!({"agent_id": "mayor", "prompt": "hi"})]
    );
    let heartbeat = &mock.requests()[0];
    assert_eq!(heartbeat.json(), json!({"container_id": "c-new"}));

    let mayor_path = kilo_db_path(root.path(), "mayor");
    assert_eq!(
        mayor_path,
        root.path()
            .join("agent-home-mayor/.local/share/kilo/kilo.db")
    );
    assert_eq!(std::fs::read(&mayor_path).expect("mayor"), mayor_db);
    assert_eq!(
        std::fs::read(kilo_db_path(root.path(), "polecat-1")).expect("polecat"),
        polecat_db
    );
    assert!(!kilo_db_path(root.path(), "polecat-2").exists());
    let results: Vec<&Hydration> = report.agents.iter().map(|a| &a.result).collect();
    assert!(matches!(results[0], Hydration::Pulled(s) if s.version == Some(2)));
    assert!(matches!(results[1], Hydration::Pulled(s) if s.version == Some(5)));
    assert!(matches!(results[2], Hydration::NoSnapshot));
    assert_eq!(
        requested(&report),
        [
            ("main".to_owned(), "polecat-1".to_owned()),
            ("main".to_owned(), "polecat-2".to_owned())
        ],
        "the Mayor's dispatch was pending; the polecats ran in c-old too"
    );
}

#[test]
fn after_a_crash_boot_requests_a_dispatch_for_every_agent_that_ran_elsewhere_without_one() {
    // c-old was killed (no drain): the heartbeat releases only polecat-1's dispatch.
    let mock = Mock::old_server(|request: &Request| {
        if is_dispatch_request(request) {
            return dispatch_answer(request);
        }
        match request.path() {
            "/api/towns/t1/heartbeat" => Response::json(
                200,
                &json!({"draining": false, "cleared_drain": false, "registry": registry("c-old"),
                        "pending_dispatches": [{"agent_id": "polecat-1", "rig_id": "main"}]}),
            ),
            _ => Response::error(404, "snapshot_not_found", "the agent has no snapshot"),
        }
    });
    let root = tempfile::tempdir().expect("tempdir");
    let report = boot(
        &mock.client(),
        "t1",
        &boot_options(root.path()),
        &mut |_| {},
    )
    .expect("boot");

    assert!(report.complete(), "{report:?}");
    let posted: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| is_dispatch_request(r))
        .map(|r| r.path().to_owned())
        .collect();
    assert_eq!(
        posted,
        [
            "/api/towns/t1/rigs/hq/agents/mayor/dispatch",
            "/api/towns/t1/rigs/main/agents/polecat-2/dispatch"
        ]
    );
    let dispatches = report.dispatches();
    let dispatched: Vec<&str> = dispatches
        .iter()
        .map(|d| d["agent_id"].as_str().expect("an agent id"))
        .collect();
    assert_eq!(
        dispatched,
        ["polecat-1", "mayor", "polecat-2"],
        "pending first"
    );
    assert!(matches!(
        &report.requested_dispatches[0].result,
        DispatchRequest::Dispatched(d) if d["prompt"] == "resume mayor"
    ));
}

#[test]
fn boot_requests_no_dispatch_for_its_own_agents_nor_while_the_town_drains() {
    // The registry is this container's own (a second boot), or the town still drains.
    for (registered, draining) in [("c-new", false), ("c-old", true)] {
        let mock = Mock::old_server(move |request: &Request| match request.path() {
            "/api/towns/t1/heartbeat" => Response::json(
                200,
                &json!({"draining": draining, "cleared_drain": false,
                        "registry": registry(registered), "pending_dispatches": []}),
            ),
            _ if is_dispatch_request(request) => dispatch_answer(request),
            _ => Response::error(404, "snapshot_not_found", "the agent has no snapshot"),
        });
        let root = tempfile::tempdir().expect("tempdir");
        let report = boot(
            &mock.client(),
            "t1",
            &boot_options(root.path()),
            &mut |_| {},
        )
        .expect("boot");
        assert!(report.requested_dispatches.is_empty(), "{registered}");
        assert!(report.complete());
        assert!(!mock.requests().iter().any(is_dispatch_request));
    }
}

#[test]
fn a_dispatch_that_cannot_be_requested_is_reported_and_leaves_the_boot_incomplete() {
    let mock = Mock::old_server(|request: &Request| match request.path() {
        "/api/towns/t1/heartbeat" => Response::json(
            200,
            &json!({"draining": false, "cleared_drain": false, "registry": registry("c-old"),
                    "pending_dispatches": []}),
        ),
        "/api/towns/t1/rigs/hq/agents/mayor/dispatch" => {
            Response::error(404, "agent_not_found", "agent \"mayor\" is not registered")
        }
        _ if is_dispatch_request(request) => dispatch_answer(request),
        _ => Response::error(404, "snapshot_not_found", "the agent has no snapshot"),
    });
    let root = tempfile::tempdir().expect("tempdir");
    let report = boot(
        &mock.client(),
        "t1",
        &boot_options(root.path()),
        &mut |_| {},
    )
    .expect("boot");
    assert!(!report.complete());
    assert_eq!(
        requested(&report).len(),
        3,
        "the others are still requested"
    );
    assert!(matches!(
        &report.requested_dispatches[1].result,
        DispatchRequest::Failed(Error::Api { status: 404, code, .. }) if code == "agent_not_found"
    ));
    assert_eq!(report.dispatches().len(), 2);
}

#[test]
fn a_failed_agent_does_not_stop_the_boot_and_is_reported() {
    let mock = Mock::old_server(|request: &Request| match request.path() {
        "/api/towns/t1/heartbeat" => Response::json(
            200,
            &json!({"draining": false, "cleared_drain": false, "registry": registry("c-old"),
                    "pending_dispatches": []}),
        ),
        "/api/towns/t1/rigs/hq/agents/mayor/db-snapshot" => Response::new(200)
            .header("X-Stasis-Sha256", &"0".repeat(64))
            .body("garbage"),
        _ => Response::error(404, "snapshot_not_found", "the agent has no snapshot"),
    });
    let root = tempfile::tempdir().expect("tempdir");
    let options = BootOptions {
        container_id: "c-new".into(),
        root: root.path().to_owned(),
        progress: false,
        chunk_cache: None,
    };
    let report = boot(&mock.client(), "t1", &options, &mut |_| {}).expect("boot");
    assert!(!report.complete());
    assert!(matches!(
        report.agents[1].result,
        Hydration::Failed(Error::Integrity { .. })
    ));
    assert!(matches!(report.agents[0].result, Hydration::NoSnapshot));
    assert!(!kilo_db_path(root.path(), "mayor").exists());
}

fn put_receipt(request: &Request) -> Response {
    let sha = sha_of(&request.body);
    Response::json(
        201,
        &json!({"version": 1, "sha256": sha, "size": request.body.len(),
                "storage": "inline", "event_watermark": null}),
    )
}

fn write_kilo_db(root: &Path, agent: &str) {
    let path = kilo_db_path(root, agent);
    let dir = path.parent().expect("parent");
    std::fs::create_dir_all(dir).expect("dirs");
    sample_db(dir, "kilo.db", 25);
}

fn drain_options(root: &Path, budget: Duration) -> DrainOptions {
    DrainOptions {
        container_id: "c-old".into(),
        root: root.to_owned(),
        budget,
        reason: "sigterm".into(),
        parallel: 1,
    }
}

#[test]
fn drain_posts_the_eviction_then_flushes_every_agent_mayor_first() {
    let mock =
        Mock::old_server(
            |request: &Request| match (request.method.as_str(), request.path()) {
                ("GET", "/api/towns/t1") => town_state(Some("c-old")),
                ("POST", "/api/towns/t1/container-eviction") => Response::json(202, &json!({})),
                ("GET", "/api/towns/t1/container-registry") => {
                    Response::json(200, &registry("c-old"))
                }
                ("PUT", _) => put_receipt(request),
                _ => Response::error(404, "not_found", "none"),
            },
        );
    let root = tempfile::tempdir().expect("tempdir");
    write_kilo_db(root.path(), "mayor");
    write_kilo_db(root.path(), "polecat-1");
    let report = drain(
        &mock.client(),
        "t1",
        &drain_options(root.path(), Duration::from_secs(60)),
        &|_| {},
    )
    .expect("drain");

    assert!(report.complete(), "{report:?}");
    let requests = mock.requests();
    let paths: Vec<&str> = requests.iter().take(3).map(Request::path).collect();
    assert_eq!(
        paths,
        [
            "/api/towns/t1",
            "/api/towns/t1/container-registry",
            "/api/towns/t1/container-eviction"
        ]
    );
    assert_eq!(
        requests[2].json(),
        json!({"container_id": "c-old", "reason": "sigterm"})
    );
    let puts: Vec<&str> = requests
        .iter()
        .filter(|r| r.method == "PUT")
        .map(Request::path)
        .collect();
    assert_eq!(
        puts,
        [
            "/api/towns/t1/rigs/hq/agents/mayor/db-snapshot",
            "/api/towns/t1/rigs/main/agents/polecat-1/db-snapshot"
        ]
    );
    let ids: Vec<&str> = report
        .agents
        .iter()
        .map(|a| a.agent.agent_id.as_str())
        .collect();
    assert_eq!(ids, ["mayor", "polecat-1", "polecat-2"]);
    assert!(matches!(report.agents[0].result, Flush::Flushed(_)));
    assert!(matches!(report.agents[2].result, Flush::NoLocalDb));
}

#[test]
fn drain_refuses_to_evict_or_overwrite_once_a_newer_container_took_over() {
    // A newer container heartbeat (it is the town's current one), or, before any heartbeat,
    // registered its agents.
    for (current, registered) in [(Some("c-newer"), "c-old"), (None, "c-newer")] {
        let mock = Mock::old_server(move |request: &Request| match request.path() {
            "/api/towns/t1" => town_state(current),
            "/api/towns/t1/container-eviction" => Response::json(202, &json!({})),
            "/api/towns/t1/container-registry" => Response::json(200, &registry(registered)),
            _ => put_receipt(request),
        });
        let root = tempfile::tempdir().expect("tempdir");
        write_kilo_db(root.path(), "mayor");
        let error = drain(
            &mock.client(),
            "t1",
            &drain_options(root.path(), Duration::from_secs(60)),
            &|_| {},
        )
        .expect_err("superseded");
        assert!(matches!(error, Error::Superseded { .. }), "{error}");
        assert_eq!(error.exit_code(), exit::FENCED);
        assert!(mock.requests().iter().all(|r| r.method == "GET"));
    }
}

#[test]
fn a_container_that_booted_from_its_predecessors_registry_drains_it() {
    // c-new heartbeat (it is current) and hydrated the agents c-old registered.
    let mock =
        Mock::old_server(
            |request: &Request| match (request.method.as_str(), request.path()) {
                ("GET", "/api/towns/t1") => town_state(Some("c-new")),
                ("GET", _) => Response::json(200, &registry("c-old")),
                ("POST", _) => Response::json(202, &json!({})),
                _ => put_receipt(request),
            },
        );
    let root = tempfile::tempdir().expect("tempdir");
    write_kilo_db(root.path(), "mayor");
    let options = DrainOptions {
        container_id: "c-new".into(),
        ..drain_options(root.path(), Duration::from_secs(60))
    };
    let report = drain(&mock.client(), "t1", &options, &|_| {}).expect("drain");
    assert!(report.complete(), "{report:?}");
    assert!(matches!(report.agents[0].result, Flush::Flushed(_)));
}

#[test]
fn agents_not_flushed_within_the_budget_are_reported_out_of_time() {
    let mock =
        Mock::old_server(
            |request: &Request| match (request.method.as_str(), request.path()) {
                ("POST", _) => Response::json(202, &json!({})),
                ("GET", _) => Response::json(200, &registry("c-old")),
                _ => put_receipt(request).delayed(Duration::from_secs(3)),
            },
        );
    let root = tempfile::tempdir().expect("tempdir");
    for agent in ["mayor", "polecat-1", "polecat-2"] {
        write_kilo_db(root.path(), agent);
    }
    let started = Instant::now();
    let report = drain(
        &mock.client(),
        "t1",
        &drain_options(root.path(), Duration::from_millis(800)),
        &|_| {},
    )
    .expect("drain");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the budget bounds the drain"
    );
    assert!(!report.complete());
    assert!(report.eviction_error.is_none());
    for agent in &report.agents {
        assert!(matches!(agent.result, Flush::OutOfTime), "{agent:?}");
    }
}

#[test]
fn a_failed_eviction_notice_does_not_stop_the_flush() {
    let mock =
        Mock::old_server(
            |request: &Request| match (request.method.as_str(), request.path()) {
                ("POST", _) => Response::error(401, "unauthorized", "bad token"),
                ("GET", _) => Response::json(200, &registry("c-old")),
                _ => put_receipt(request),
            },
        );
    let root = tempfile::tempdir().expect("tempdir");
    write_kilo_db(root.path(), "mayor");
    let report = drain(
        &mock.client(),
        "t1",
        &drain_options(root.path(), Duration::from_secs(60)),
        &|_| {},
    )
    .expect("drain");
    assert!(report.eviction_error.is_some());
    assert!(matches!(report.agents[0].result, Flush::Flushed(_)));
    assert!(!report.complete());
}

#[test]
fn a_retried_heartbeat_repeats_its_idempotency_key() {
    let attempts = std::sync::atomic::AtomicUsize::new(0);
    let mock = Mock::old_server(move |request| {
        assert_eq!(request.path(), "/api/towns/t1/heartbeat");
        if attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Response::new(0);
        }
        Response::json(
            200,
            &json!({"draining": false, "cleared_drain": true, "registry": null,
                    "pending_dispatches": [{"agent_id": "mayor"}]}),
        )
    });
    let client = mock.client();
    let beat = stasis_client::town::heartbeat(&client, "t1", "c-1", None).expect("heartbeat");
    assert_eq!(beat.pending_dispatches.len(), 1);
    let keys: Vec<Option<String>> = mock
        .requests()
        .iter()
        .map(|r| r.header("idempotency-key").map(str::to_owned))
        .collect();
    assert_eq!(keys.len(), 2, "one failed attempt, one retry");
    assert!(keys[0].is_some(), "a key is sent");
    assert_eq!(keys[0], keys[1], "the retry repeats it");
    let again = stasis_client::town::heartbeat(&client, "t1", "c-1", None).expect("heartbeat");
    drop(again);
    let last = mock
        .requests()
        .last()
        .and_then(|r| r.header("idempotency-key").map(str::to_owned));
    assert_ne!(last, keys[0], "a new heartbeat has a new key");
}
