//! Fencing and token lifetimes, as a container's processes meet them: a sidecar stops writing
//! at once when another container takes the town over, and exits with its own code; `boot`, a
//! sidecar and `drain` keep working long past the lifetime of the token they were started with.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::json;
use stasis_api::auth::Scope;
use stasis_client::credentials::{TokenClaims, token_file};
use stasis_client::exit;

use super::harness::{
    CONTAINER, TOWN, client_binary, get, heartbeat, read_log, send_json, test_numbers, wait_for_log,
};
use super::{PATIENCE, Rig};
use crate::helpers::admin_token;
use crate::support::mint;

/// Runs `stasis-client` with `args` against the rig's stasis, presenting `token`.
fn run_client(rig: &Rig, token: &str, args: &[&str]) -> Output {
    Command::new(client_binary())
        .args(args)
        .env("STASIS_URL", &rig.stasis.base)
        .env("STASIS_TOKEN", token)
        .output()
        .expect("stasis-client runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_fenced_sidecar_stops_writing_at_once_and_exits_with_its_own_code() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&[]);
    rig.kilo
        .emit("test.n", json!({"sessionID": "ses_a", "n": 0}));
    wait_for_log(&rig.stasis.base, PATIENCE, |log| test_numbers(log) == [0]);

    let (status, _) = heartbeat(&rig.stasis.base, "c-successor");
    assert_eq!(status, 200);
    rig.kilo
        .emit("test.n", json!({"sessionID": "ses_a", "n": 1}));
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(i32::from(exit::FENCED)), "{}", exit.stderr);
    assert!(
        exit.stderr.contains("container_fenced") && exit.stderr.contains("c-successor"),
        "a message naming the container holding the town: {}",
        exit.stderr
    );
    assert_eq!(exit.summary["outcome"], "failed");
    assert_eq!(test_numbers(&read_log(&rig.stasis.base)), [0]);

    let root = rig.root.to_string_lossy().into_owned();
    let drain = [
        "drain",
        "--town",
        TOWN,
        "--container-id",
        CONTAINER,
        "--root",
        &root,
    ];
    let drained = run_client(&rig, &admin_token(), &drain);
    assert_eq!(
        drained.status.code(),
        Some(i32::from(exit::FENCED)),
        "{}",
        text(&drained.stderr)
    );
    let (_, town) = get(&rig.stasis.base, &format!("/api/towns/{TOWN}"));
    assert_eq!(
        town["draining"],
        json!(false),
        "a fenced drain evicts nothing"
    );
}

#[test]
fn boot_a_sidecar_and_drain_outlive_the_token_they_were_started_with() {
    let rig = Rig::new();
    let lifetime = Duration::from_secs(3);
    let token = mint(Scope::Town(TOWN.into()), lifetime);
    let root = rig.root.to_string_lossy().into_owned();
    let boot = [
        "boot",
        "--town",
        TOWN,
        "--container-id",
        CONTAINER,
        "--root",
        &root,
    ];
    let booted = run_client(&rig, &token, &boot);
    assert_eq!(booted.status.code(), Some(0), "{}", text(&booted.stderr));
    let file = token_file(&rig.root, CONTAINER);
    let shared = std::fs::read_to_string(&file).expect("boot wrote the token file");
    let claims = TokenClaims::of(shared.trim()).expect("a JWT");
    assert!(claims.binds(TOWN, CONTAINER), "{claims:?}");
    assert_eq!(claims.lifetime(), lifetime);

    let mut setup = rig.setup();
    setup.token = token.clone();
    let before = rig.kilo.connections();
    let sidecar = super::harness::SidecarProcess::spawn(&setup);
    rig.kilo.wait_connections(before + 1, PATIENCE);
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < lifetime * 3 {
        rig.kilo
            .emit("test.n", json!({"sessionID": "ses_a", "n": n}));
        n += 1;
        std::thread::sleep(Duration::from_millis(250));
    }
    wait_for_log(&rig.stasis.base, PATIENCE, |log| {
        test_numbers(log) == (0..n).collect::<Vec<_>>()
    });
    let refreshed = std::fs::read_to_string(&file).expect("the token file");
    assert_ne!(refreshed, shared, "the sidecar's refreshes are shared");

    // The token the container was started with has expired; the drain runs on the shared one.
    let registry = json!({"container_id": CONTAINER, "agents": [
        {"agent_id": "mayor", "rig_id": super::harness::RIG, "role": "mayor"}]});
    let path = format!("/api/towns/{TOWN}/container-registry");
    assert_eq!(send_json(&rig.stasis.base, "PUT", &path, &registry).0, 200);
    let drain = [
        "drain",
        "--town",
        TOWN,
        "--container-id",
        CONTAINER,
        "--root",
        &root,
    ];
    let drained = run_client(&rig, &token, &drain);
    assert_eq!(drained.status.code(), Some(0), "{}", text(&drained.stderr));
    let (_, town) = get(&rig.stasis.base, &format!("/api/towns/{TOWN}"));
    assert_eq!(town["evicting_container_id"], json!(CONTAINER));

    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    assert_eq!(exit.code, Some(0), "{}", exit.stderr);
    let expired = run_client(
        &rig,
        &token,
        &["tail", "--town", TOWN, "--rig", "hq", "--agent", "mayor"],
    );
    assert_eq!(expired.status.code(), Some(i32::from(exit::REFUSED)));
    assert!(
        text(&expired.stderr).contains("expired"),
        "{}",
        text(&expired.stderr)
    );
}
