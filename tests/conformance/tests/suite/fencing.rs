//! Fencing: once another container has heartbeat, every write a superseded
//! container makes with its container token is refused (409
//! `container_fenced`, naming the current container) and changes nothing;
//! its reads stay allowed, and its late heartbeat takes nothing over.

use std::time::{Duration, Instant};

use stasis_conformance::tokens::container_token;
use stasis_conformance::town::{Agent, Town};
use stasis_conformance::{Reply, Value, assert_error, call, json, snapshot};

/// A container of `town`, speaking with its own container token.
struct Container {
    id: &'static str,
    token: String,
    town: Town,
}

impl Container {
    fn new(town: &Town, id: &'static str) -> Container {
        Container {
            id,
            token: container_token(&town.id, id),
            town: town.clone(),
        }
    }

    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let request = call(method, path).token(&self.token);
        match body {
            Some(body) => request.json(body).send(),
            None => request.send(),
        }
    }

    fn heartbeat(&self) -> Value {
        let path = self.town.path("/heartbeat");
        self.send("POST", &path, Some(&json!({"container_id": self.id})))
            .ok()
    }

    fn push(&self, mayor: &Agent, bytes: &[u8]) -> Reply {
        call("PUT", &mayor.path("/db-snapshot"))
            .token(&self.token)
            .header("Content-Type", "application/octet-stream")
            .body(bytes.to_vec())
            .send()
    }

    /// `PUT /db-snapshot/chunks/{sha256}` of `bytes`.
    fn put_chunk(&self, mayor: &Agent, bytes: &[u8]) -> Reply {
        let name = snapshot::sha256_hex(bytes);
        call("PUT", &mayor.path(&format!("/db-snapshot/chunks/{name}")))
            .token(&self.token)
            .header("Content-Type", "application/octet-stream")
            .body(bytes.to_vec())
            .send()
    }

    /// `PUT /db-snapshot/manifest` of a one-chunk snapshot of `bytes`.
    fn commit_manifest(&self, mayor: &Agent, bytes: &[u8]) -> Reply {
        let name = snapshot::sha256_hex(bytes);
        let manifest =
            json!({"size": bytes.len(), "sha256": name, "chunk_size": 4096, "chunks": [name]});
        self.send("PUT", &mayor.path("/db-snapshot/manifest"), Some(&manifest))
    }

    fn append(&self, mayor: &Agent, text: &str) -> Reply {
        let body = json!({"events": [{"type": "message.updated", "session_id": "s1", "data": {"text": text}}]});
        self.send("POST", &mayor.path("/events"), Some(&body))
    }

    /// Every kind of write a container makes, once.
    fn write_everything(&self, mayor: &Agent, round: usize) -> Vec<(String, Reply)> {
        let t = |s: &str| self.town.path(s);
        let registry = json!({"container_id": self.id, "agents": []});
        vec![
            (
                "snapshot".into(),
                self.push(mayor, snapshot::bytes(4096, 2)),
            ),
            (
                "chunk upload".into(),
                self.put_chunk(mayor, snapshot::bytes(4096, 4)),
            ),
            (
                "missing".into(),
                self.send(
                    "POST",
                    &mayor.path("/db-snapshot/missing"),
                    Some(&json!({"chunks": [snapshot::sha256_hex(snapshot::bytes(4096, 3))]})),
                ),
            ),
            (
                "manifest commit".into(),
                self.commit_manifest(mayor, snapshot::bytes(4096, 3)),
            ),
            (
                "append".into(),
                self.append(mayor, &format!("zombie {round}")),
            ),
            (
                "checkpoint".into(),
                self.send(
                    "PUT",
                    &mayor.path("/checkpoint"),
                    Some(&json!({"zombie": round})),
                ),
            ),
            (
                "memory".into(),
                self.send("PUT", &mayor.path("/memory/k"), Some(&json!(round))),
            ),
            (
                "session".into(),
                self.send(
                    "PUT",
                    &mayor.path("/sessions/s1"),
                    Some(&json!({"status": "failed"})),
                ),
            ),
            (
                "registry".into(),
                self.send("PUT", &t("/container-registry"), Some(&registry)),
            ),
            (
                "eviction".into(),
                self.send("POST", &t("/container-eviction"), Some(&json!({}))),
            ),
            (
                "mayor message".into(),
                self.send("POST", &t("/mayor/message"), Some(&json!({"text": "hi"}))),
            ),
        ]
    }
}

fn assert_fenced(what: &str, reply: &Reply, current: &str) {
    let error = assert_error(reply, 409, "container_fenced");
    assert_eq!(
        error.get("current_container_id"),
        Some(&json!(current)),
        "{what}: {error:?}"
    );
}

#[test]
fn a_zombie_container_never_overwrites_what_its_successor_wrote() {
    let town = Town::fresh("zombie");
    let mayor = town.agent("rig-1", "mayor");
    let (a, b) = (Container::new(&town, "c-a"), Container::new(&town, "c-b"));
    a.heartbeat();
    a.send("PUT", &mayor.path(""), Some(&json!({"role": "mayor"})));
    assert_eq!(a.append(&mayor, "from a").status, 200);
    assert_eq!(a.push(&mayor, snapshot::bytes(4096, 0)).status, 201);
    // A chunk A uploaded while it held the town: its manifest commit after
    // the takeover must still be refused.
    assert_eq!(a.put_chunk(&mayor, snapshot::bytes(4096, 3)).status, 201);

    let beat = b.heartbeat();
    assert_eq!(
        beat.get("fenced"),
        None,
        "the new container is not fenced: {beat}"
    );
    assert_eq!(b.append(&mayor, "from b").status, 200);
    assert_eq!(b.push(&mayor, snapshot::bytes(4096, 1)).status, 201);
    let (town_before, mayor_before) = (town.state(), mayor.state());

    // A keeps writing for a while: every write is fenced.
    let started = Instant::now();
    let (mut rounds, mut refused) = (0, 0);
    while rounds < 5 || started.elapsed() < Duration::from_secs(2) {
        for (what, reply) in a.write_everything(&mayor, rounds) {
            assert_fenced(&what, &reply, "c-b");
            refused += 1;
        }
        rounds += 1;
    }
    eprintln!(
        "zombie: {rounds} rounds in {:.1} s, {refused} writes of A refused ({rounds} snapshot \
         pushes, {rounds} chunk uploads, missing queries and manifest commits, {rounds} appends, \
         and checkpoint, memory, session, registry, eviction and Mayor message writes); B's \
         state unchanged",
        started.elapsed().as_secs_f64()
    );
    town.assert_unchanged(&town_before);
    mayor.assert_unchanged(&mayor_before);
    let served = mayor.snapshot_reply();
    assert_eq!(
        served.body,
        snapshot::bytes(4096, 1),
        "B's snapshot is served"
    );
    let refused_chunk = snapshot::sha256_hex(snapshot::bytes(4096, 4));
    let chunk = call(
        "GET",
        &mayor.path(&format!("/db-snapshot/chunks/{refused_chunk}")),
    )
    .send();
    assert_error(&chunk, 404, "chunk_not_found");

    // Its reads stay allowed.
    let read = a.send("GET", &mayor.path("/events"), None).ok();
    assert_eq!(read["last_seq"], json!(2));

    // Its late heartbeat answers without taking over.
    let late = a.heartbeat();
    assert_eq!(late["fenced"], json!(true), "{late}");
    assert_eq!(late["current_container_id"], json!("c-b"));
    assert_eq!(late["pending_dispatches"], json!([]));
    assert_eq!(town.get()["current_container_id"], json!("c-b"));
}

#[test]
fn a_zombies_late_heartbeat_does_not_end_its_successors_drain() {
    let town = Town::fresh("zombie-drain");
    let (a, b) = (Container::new(&town, "c-a"), Container::new(&town, "c-b"));
    a.heartbeat();
    b.heartbeat();
    let evicted = b.send("POST", &town.path("/container-eviction"), Some(&json!({})));
    assert_eq!(
        evicted.expect_json(202)["evicting_container_id"],
        json!("c-b")
    );

    let ready = town.events_of("container_ready").len();
    let late = a.heartbeat();
    assert_eq!(late["fenced"], json!(true), "{late}");
    assert_eq!(late["draining"], json!(true));
    assert_eq!(late["cleared_drain"], json!(false));
    let state = town.get();
    assert_eq!(state["draining"], json!(true), "{state}");
    assert_eq!(state["current_container_id"], json!("c-b"));
    assert_eq!(town.events_of("container_ready").len(), ready);

    let next = Container::new(&town, "c-c").heartbeat();
    assert_eq!(next["cleared_drain"], json!(true), "{next}");
}

#[test]
fn a_draining_container_flushes_until_its_successor_heartbeats() {
    let town = Town::fresh("drain-flush");
    let mayor = town.agent("rig-1", "mayor");
    let a = Container::new(&town, "c-a");
    a.heartbeat();
    let evicted = a.send("POST", &town.path("/container-eviction"), Some(&json!({})));
    assert_eq!(evicted.status, 202, "{}", evicted.text());
    assert_eq!(a.push(&mayor, snapshot::bytes(4096, 0)).status, 201);
    Container::new(&town, "c-b").heartbeat();
    assert_fenced(
        "after the successor",
        &a.push(&mayor, snapshot::bytes(4096, 1)),
        "c-b",
    );
}

#[test]
fn a_container_that_never_heartbeat_writes_only_once_it_has() {
    let town = Town::fresh("not-yet");
    let mayor = town.agent("rig-1", "mayor");
    Container::new(&town, "c-a").heartbeat();
    let b = Container::new(&town, "c-b");
    let early = b.append(&mayor, "too early");
    let error = assert_error(&early, 409, "container_not_current");
    assert_eq!(error.get("current_container_id"), Some(&json!("c-a")));
    assert_eq!(mayor.log.state().last_seq, 0);
    b.heartbeat();
    assert_eq!(b.append(&mayor, "now").status, 200);
}

#[test]
fn a_container_token_names_only_its_own_container() {
    let town = Town::fresh("own-container");
    let a = Container::new(&town, "c-a");
    a.heartbeat();
    let before = town.state();
    let other = json!({"container_id": "c-other"});
    for (method, suffix, body) in [
        ("POST", "/heartbeat", other.clone()),
        ("POST", "/container-eviction", other.clone()),
        (
            "PUT",
            "/container-registry",
            json!({"container_id": "c-other", "agents": []}),
        ),
        ("POST", "/container-token", other.clone()),
    ] {
        let reply = a.send(method, &town.path(suffix), Some(&body));
        let error = assert_error(&reply, 403, "forbidden");
        assert_eq!(
            error.get("reason"),
            Some(&json!("other_container")),
            "{suffix}"
        );
    }
    town.assert_unchanged(&before);
}

/// A refused import leaves its keep-alive connection to the next request,
/// even when it was refused before its body was read (the edge read none of
/// it, and workerd then held the next request about one time in three).
#[test]
fn a_fenced_import_leaves_its_connection_to_the_next_request() {
    let town = Town::fresh("fenced-import");
    let mayor = town.agent("rig-1", "mayor");
    let (a, b) = (Container::new(&town, "c-a"), Container::new(&town, "c-b"));
    a.heartbeat();
    b.heartbeat();
    // One connection, reused, and a patience far below the suite's.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(1)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let base = &stasis_conformance::target().base;
    let manifest = json!({"format": "stasis.agent.v1", "agent": {"role": "mayor", "metadata": null},
        "sessions": [], "events": [], "checkpoint": null, "memory": [], "snapshot": null});
    let admin = format!("Bearer {}", stasis_conformance::admin_token());
    for round in 0..10 {
        let refused = agent
            .put(format!("{base}{}", mayor.path("/import")))
            .header("Authorization", format!("Bearer {}", a.token))
            .header("Content-Type", "application/json")
            .send(manifest.to_string().as_bytes());
        let status = refused.map(|r| r.status().as_u16());
        assert_eq!(status.ok(), Some(409), "round {round}: the fenced import");
        let next = agent
            .get(format!("{base}{}", town.path("")))
            .header("Authorization", &admin)
            .call();
        let status = next.map(|r| r.status().as_u16());
        assert_eq!(
            status.as_ref().ok(),
            Some(&200),
            "round {round}: the request after it, on the same connection: {status:?}"
        );
    }
}
