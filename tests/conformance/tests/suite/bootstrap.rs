//! Bootstrap tokens, and the container flow built on them: a container is
//! started with a bootstrap token, which does nothing but be exchanged, once,
//! for a container token of one container. A zombie container then holds
//! only tokens that fencing reaches: once its successor has heartbeat,
//! nothing it sends with any of them changes anything.

use stasis_conformance::tokens::bootstrap_token;
use stasis_conformance::town::{Agent, Town, TownState};
use stasis_conformance::{Reply, Value, assert_error, call, json, num, snapshot};

fn exchange(town: &Town, token: &str, container: &str) -> Reply {
    call("POST", &town.path("/container-token"))
        .token(token)
        .json(&json!({ "container_id": container }))
        .send()
}

fn refresh(token: &str) -> Reply {
    call("POST", "/api/token/refresh").token(token).send()
}

fn token_of(issued: &Value) -> String {
    issued["token"].as_str().unwrap_or_default().to_owned()
}

fn send(token: &str, method: &str, path: &str, body: Option<&Value>) -> Reply {
    let request = call(method, path).token(token);
    match body {
        Some(body) => request.json(body).send(),
        None => request.send(),
    }
}

fn bytes_to(token: &str, method: &str, path: &str, bytes: &[u8]) -> Reply {
    call(method, path)
        .token(token)
        .header("Content-Type", "application/octet-stream")
        .body(bytes.to_vec())
        .send()
}

fn heartbeat(town: &Town, token: &str, container: &str) -> Reply {
    let body = json!({ "container_id": container });
    send(token, "POST", &town.path("/heartbeat"), Some(&body))
}

/// A container as `stasis-client boot` starts it: handed a bootstrap token,
/// it exchanges it for a container token of its id and heartbeats; a
/// refresh later it holds one more token.
struct Container {
    id: &'static str,
    town: Town,
    /// Every token it holds, named: the bootstrap token it was started
    /// with, its container token, and a refresh of that one.
    held: Vec<(&'static str, String)>,
}

impl Container {
    fn boot(town: &Town, id: &'static str) -> Container {
        let bootstrap = bootstrap_token(&town.id);
        let issued = exchange(town, &bootstrap, id).ok();
        assert_eq!(issued["scope"], json!("container"), "{issued}");
        assert_eq!(issued["container_id"], json!(id));
        let token = token_of(&issued);
        let beat = heartbeat(town, &token, id).ok();
        assert_eq!(beat.get("fenced"), None, "{id} is not fenced: {beat}");
        let refreshed = token_of(&refresh(&token).ok());
        Container {
            id,
            town: town.clone(),
            held: vec![
                ("bootstrap token", bootstrap),
                ("container token", token),
                ("refreshed container token", refreshed),
            ],
        }
    }

    fn token(&self) -> &str {
        &self.held[1].1
    }

    /// The snapshot, checkpoint, memory, registry and mayor role a running
    /// container leaves behind.
    fn write_state(&self, mayor: &Agent, round: usize) {
        let token = self.token();
        let t = |s: &str| self.town.path(s);
        let registry = json!({"container_id": self.id, "agents": [
            {"agent_id": "mayor", "rig_id": "rig-1", "role": "mayor"}]});
        let event = json!({"events": [{"type": "message.updated", "session_id": "s1",
            "data": {"text": format!("from {}", self.id)}}]});
        let writes = [
            send(
                token,
                "PUT",
                &mayor.path(""),
                Some(&json!({"role": "mayor"})),
            ),
            send(token, "POST", &mayor.path("/events"), Some(&event)),
            bytes_to(
                token,
                "PUT",
                &mayor.path("/db-snapshot"),
                snapshot::bytes(4096, round),
            ),
            send(
                token,
                "PUT",
                &mayor.path("/checkpoint"),
                Some(&json!({"by": self.id})),
            ),
            send(
                token,
                "PUT",
                &mayor.path("/memory/k"),
                Some(&json!(self.id)),
            ),
            send(token, "PUT", &t("/container-registry"), Some(&registry)),
        ];
        for reply in writes {
            assert!(
                (200..300).contains(&reply.status),
                "{}: {}",
                self.id,
                reply.text()
            );
        }
    }
}

/// Every write a container can make, sent with `token`: named, answered.
fn every_write(town: &Town, mayor: &Agent, token: &str, container: &str) -> Vec<(String, Reply)> {
    let t = |s: &str| town.path(s);
    let m = |s: &str| mayor.path(s);
    let chunk = snapshot::bytes(4096, 7);
    let chunk_name = snapshot::sha256_hex(chunk);
    let manifest = json!({"size": chunk.len(), "sha256": chunk_name, "chunk_size": 4096, "chunks": [chunk_name]});
    let event = json!({"events": [{"type": "message.updated", "session_id": "s1",
        "data": {"text": "zombie"}}]});
    let import = json!({"format": "stasis.agent.v1", "agent": {"role": "mayor", "metadata": null},
        "sessions": [], "events": [], "checkpoint": null, "memory": [], "snapshot": null});
    let import = call("PUT", &m("/import"))
        .token(token)
        .header("Content-Type", "application/json")
        .body(import.to_string().into_bytes())
        .send();
    vec![
        (
            "append".into(),
            send(token, "POST", &m("/events"), Some(&event)),
        ),
        (
            "whole snapshot".into(),
            bytes_to(token, "PUT", &m("/db-snapshot"), snapshot::bytes(4096, 9)),
        ),
        (
            "chunk upload".into(),
            bytes_to(
                token,
                "PUT",
                &m(&format!("/db-snapshot/chunks/{chunk_name}")),
                chunk,
            ),
        ),
        (
            "missing chunks".into(),
            send(
                token,
                "POST",
                &m("/db-snapshot/missing"),
                Some(&json!({"chunks": [chunk_name]})),
            ),
        ),
        (
            "manifest commit".into(),
            send(token, "PUT", &m("/db-snapshot/manifest"), Some(&manifest)),
        ),
        (
            "snapshot delete".into(),
            send(token, "DELETE", &m("/db-snapshot"), None),
        ),
        (
            "checkpoint".into(),
            send(
                token,
                "PUT",
                &m("/checkpoint"),
                Some(&json!({"stale": true})),
            ),
        ),
        (
            "memory".into(),
            send(token, "PUT", &m("/memory/k"), Some(&json!("stale"))),
        ),
        (
            "memory delete".into(),
            send(token, "DELETE", &m("/memory/k"), None),
        ),
        (
            "session".into(),
            send(
                token,
                "PUT",
                &m("/sessions/s1"),
                Some(&json!({"status": "failed"})),
            ),
        ),
        (
            "agent record".into(),
            send(token, "PUT", &m(""), Some(&json!({"role": "polecat"}))),
        ),
        ("import".into(), import),
        (
            "dispatch".into(),
            send(token, "POST", &m("/dispatch"), Some(&json!({}))),
        ),
        (
            "registry".into(),
            send(
                token,
                "PUT",
                &t("/container-registry"),
                Some(&json!({"container_id": container, "agents": []})),
            ),
        ),
        (
            "eviction".into(),
            send(token, "POST", &t("/container-eviction"), Some(&json!({}))),
        ),
        (
            "mayor message".into(),
            send(
                token,
                "POST",
                &t("/mayor/message"),
                Some(&json!({"text": "redispatch me"})),
            ),
        ),
    ]
}

fn assert_reason(what: &str, reply: &Reply, status: u16, reason: &str) {
    let error = assert_error(reply, status, "forbidden");
    assert_eq!(
        error.get("reason"),
        Some(&json!(reason)),
        "{what}: {error:?}"
    );
}

fn assert_fenced(what: &str, reply: &Reply, current: &str) {
    let error = assert_error(reply, 409, "container_fenced");
    assert_eq!(
        error.get("current_container_id"),
        Some(&json!(current)),
        "{what}: {error:?}"
    );
}

/// The town as a reader sees it, but for when it last heard a heartbeat
/// (which a superseded container's heartbeat may move; it takes nothing
/// over).
fn without_liveness(mut state: TownState) -> TownState {
    if let Some(town) = state.town.as_object_mut() {
        town.retain(|key, _| !key.contains("heartbeat"));
    }
    state
}

#[test]
fn a_zombie_holding_only_what_boot_gives_it_cannot_change_anything() {
    let town = Town::fresh("zombie-boot");
    let mayor = town.agent("rig-1", "mayor");
    let a = Container::boot(&town, "c-a");
    a.write_state(&mayor, 0);
    let b = Container::boot(&town, "c-b");
    b.write_state(&mayor, 1);
    let (town_before, mayor_before) = (town.state(), mayor.state());

    let mut refused = 0;
    for (kind, token) in &a.held {
        for (what, reply) in every_write(&town, &mayor, token, a.id) {
            let what = format!("{what} with A's {kind}");
            if *kind == "bootstrap token" {
                assert_reason(&what, &reply, 403, "bootstrap_only");
            } else {
                assert_fenced(&what, &reply, b.id);
            }
            refused += 1;
        }
        let what = format!("refresh of A's {kind}");
        match *kind {
            "bootstrap token" => assert_reason(&what, &refresh(token), 403, "bootstrap_only"),
            _ => assert_fenced(&what, &refresh(token), b.id),
        }
        // Exchanged again: for A itself, or for a fresh container id that
        // was never superseded (which would let A take the town over).
        assert_fenced(
            &format!("exchange of A's {kind} for A"),
            &exchange(&town, token, a.id),
            b.id,
        );
        let fresh = exchange(&town, token, "c-fresh");
        let reason = match *kind {
            "bootstrap token" => "bootstrap_spent",
            _ => "other_container",
        };
        assert_reason(
            &format!("exchange of A's {kind} for c-fresh"),
            &fresh,
            403,
            reason,
        );
        refused += 4;
    }
    eprintln!(
        "zombie A: {refused} requests with its {} tokens refused, B's state unchanged",
        a.held.len()
    );
    town.assert_unchanged(&town_before);
    mayor.assert_unchanged(&mayor_before);
    assert_eq!(mayor.snapshot_reply().body, snapshot::bytes(4096, 1));
    let zombie_chunk = snapshot::sha256_hex(snapshot::bytes(4096, 7));
    let chunk = call(
        "GET",
        &mayor.path(&format!("/db-snapshot/chunks/{zombie_chunk}")),
    )
    .send();
    assert_error(&chunk, 404, "chunk_not_found");

    // Its heartbeat, with each token: the bootstrap token is refused, the
    // container tokens are answered as fenced and take nothing over.
    let (_, bootstrap) = &a.held[0];
    assert_reason(
        "heartbeat with A's bootstrap token",
        &heartbeat(&town, bootstrap, a.id),
        403,
        "bootstrap_only",
    );
    for (kind, token) in &a.held[1..] {
        let late = heartbeat(&town, token, a.id).ok();
        assert_eq!(late["fenced"], json!(true), "{kind}: {late}");
        assert_eq!(late["current_container_id"], json!(b.id));
        assert_eq!(late["pending_dispatches"], json!([]));
    }
    assert_eq!(
        without_liveness(town.state()),
        without_liveness(town_before),
        "A's heartbeats took nothing over"
    );
    mayor.assert_unchanged(&mayor_before);
    assert_eq!(
        mayor.checkpoint_reply().json(),
        json!({"by": "c-b"}),
        "B's checkpoint stands"
    );
}

#[test]
fn a_bootstrap_token_only_exchanges_once_for_one_container() {
    let town = Town::fresh("bootstrap-once");
    let mayor = town.agent("rig-1", "mayor");
    let bootstrap = bootstrap_token(&town.id);
    let before = town.state();
    for (what, reply) in [
        ("town", send(&bootstrap, "GET", &town.path(""), None)),
        (
            "events",
            send(&bootstrap, "GET", &mayor.path("/events"), None),
        ),
        (
            "registry",
            send(&bootstrap, "GET", &town.path("/container-registry"), None),
        ),
        ("refresh", refresh(&bootstrap)),
        ("heartbeat", heartbeat(&town, &bootstrap, "c-1")),
    ] {
        assert_reason(what, &reply, 403, "bootstrap_only");
    }
    town.assert_unchanged(&before);

    let issued = exchange(&town, &bootstrap, "c-1").ok();
    assert_eq!(issued["scope"], json!("container"));
    assert_eq!(issued["container_id"], json!("c-1"));
    assert_eq!(
        num(&issued, "expires_at") - num(&issued, "issued_at"),
        86_400 * 1000,
        "a container token lives a day, however short its bootstrap token"
    );
    // A retry of the same exchange (its answer lost) gets the same container.
    let again = exchange(&town, &bootstrap, "c-1").ok();
    assert_eq!(again["container_id"], json!("c-1"));
    assert_reason(
        "another container",
        &exchange(&town, &bootstrap, "c-2"),
        403,
        "bootstrap_spent",
    );
    let other = Town::fresh("bootstrap-other");
    assert_reason(
        "another town",
        &exchange(&other, &bootstrap, "c-1"),
        403,
        "other_town",
    );
    let beat = heartbeat(&town, &token_of(&issued), "c-1");
    assert_eq!(beat.status, 200, "{}", beat.text());
}
