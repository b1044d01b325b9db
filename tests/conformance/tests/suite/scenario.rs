//! The eviction-and-recovery scenario stasis exists for, end to end, over HTTP only.
//!
//! It guards against the failure the product exists for: a town's
//! container is replaced (eviction, redeploy) and the Mayor comes back with
//! a fresh session that remembers nothing, while a message sent during the
//! gap is lost and the new container's agents start from empty databases.
//!
//! 1. Container A heartbeats, registers the Mayor and two polecats, the
//!    Mayor chats (streamed events), saves a checkpoint, and every agent
//!    pushes its kilo.db (20 MB for the Mayor, 3 MB and 500 KB for the
//!    polecats).
//! 2. A gets SIGTERM: `container-eviction` → draining; A flushes its
//!    snapshots (new versions) and dies.
//! 3. The user messages the Mayor during the gap: persisted, deferred.
//! 5. A late heartbeat from A does not clear draining.
//! 4. Container B heartbeats: draining clears; B receives the registry and
//!    a Mayor dispatch carrying the checkpoint and the rebuilt conversation
//!    including the gap message; B hydrates every kilo.db byte-identical.
//!
//! Step 5 runs before step 4, as it must to mean anything.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use std::collections::BTreeMap;

use stasis_conformance::town::{
    Agent, Kilo, Town, assert_dispatch_shape, assert_prompt, streamed, turn, turns, user_message,
};
use stasis_conformance::{Value, json, num};

const A: &str = "container-a";
const B: &str = "container-b";
const MAYOR_SESSION: &str = "ses-mayor-a";
const GAP: &str = "Are you still there? Did the deploy of gt-21 go out?";

/// What the user asked and how the Mayor answered, as streamed deltas.
const CHAT: [(&str, &[&str]); 3] = [
    (
        "Where are we on the billing rig?",
        &[
            "Polecat-1 ",
            "is midway ",
            "through gt-21 ",
            "(the invoice ",
            "rounding fix); ",
            "polecat-2 ",
            "is reviewing ",
            "gt-19.",
        ],
    ),
    (
        "Ship gt-21 as soon as it passes.",
        &[
            "Will do: ",
            "I queued ",
            "the merge ",
            "behind ",
            "the test run.",
        ],
    ),
    (
        "And remind me what gt-19 was?",
        &[
            "gt-19 ", "adds ", "retries ", "to the ", "webhook ", "sender.",
        ],
    ),
];

/// The town, its three agents, and the bytes each agent last pushed.
struct Scenario {
    town: Town,
    mayor: Agent,
    agents: Vec<Agent>,
    pushed: BTreeMap<String, Kilo>,
    checkpoint: Value,
}

impl Scenario {
    fn new() -> Scenario {
        let town = Town::fresh("scenario");
        let mayor = town.agent("hq", "mayor");
        let agents = vec![
            mayor.clone(),
            town.agent("rig-billing", "polecat-1"),
            town.agent("rig-billing", "polecat-2"),
        ];
        Scenario {
            town,
            mayor,
            agents,
            pushed: BTreeMap::new(),
            checkpoint: json!({
                "convoy": "cv-billing-1",
                "beads": {"gt-21": "merging", "gt-19": "in-review"},
                "user_prefs": {"notify": "on-merge"},
            }),
        }
    }

    /// The registry A reports: each agent, its role, session and port.
    fn registry_of_a(&self) -> Value {
        json!([
            {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": MAYOR_SESSION, "port": 4096},
            {"agent_id": "polecat-1", "rig_id": "rig-billing", "role": "polecat", "session_id": "ses-p1-a", "port": 4097},
            {"agent_id": "polecat-2", "rig_id": "rig-billing", "role": "polecat", "session_id": "ses-p2-a", "port": 4098},
        ])
    }

    /// The turns the Mayor's chat rebuilds to.
    fn chat_turns() -> Vec<Value> {
        CHAT.iter()
            .flat_map(|(ask, deltas)| [turn("user", ask), turn("assistant", &deltas.concat())])
            .collect()
    }

    /// Step 1, until the snapshots: A boots, registers, chats, checkpoints.
    fn container_a_works(&self) {
        let beat = self.town.heartbeat(A);
        assert_eq!(beat["draining"], json!(false));
        self.mayor.register("mayor");
        self.agents[1].register("polecat");
        self.agents[2].register("polecat");
        self.town.put_registry(A, self.registry_of_a());
        self.mayor_chats();
        for (n, polecat) in self.agents[1..].iter().enumerate() {
            let session = format!("ses-p{}-a", n + 1);
            polecat.log.append(Value::Array(streamed(
                Some(&session),
                "work-1",
                "assistant",
                &["Running ", "the tests."],
            )));
        }
        self.mayor.put_checkpoint(&self.checkpoint);
    }

    /// The Mayor's chat, streamed as a container sends it: a few events per
    /// append, stamped, with one retry of a batch that did arrive.
    fn mayor_chats(&self) {
        let mut all = Vec::new();
        for (n, (ask, deltas)) in CHAT.iter().enumerate() {
            all.extend(user_message(Some(MAYOR_SESSION), &format!("u{n}"), ask));
            all.extend(streamed(
                Some(MAYOR_SESSION),
                &format!("a{n}"),
                "assistant",
                deltas,
            ));
        }
        assert!(all.len() >= 30, "a few dozen events: {}", all.len());
        let producer = "container-a.mayor";
        for (stamp, chunk) in (0_u64..).zip(all.chunks(4)) {
            let sent = self
                .mayor
                .log
                .append_stamped(Value::Array(chunk.to_vec()), producer, stamp);
            assert_eq!(sent["duplicate"], json!(false));
        }
        let retry = self
            .mayor
            .log
            .append_stamped(Value::Array(all[..4].to_vec()), producer, 0);
        assert_eq!(retry["duplicate"], json!(true), "a retry appends nothing");
        assert_eq!(turns(&self.mayor.conversation("")), Scenario::chat_turns());
    }

    /// Pushes a kilo.db for every agent (sizes in agent order) as version
    /// `version`; a version after the first replaces the one before by
    /// `If-Match`, as a container's final flush does.
    fn push_snapshots(&mut self, sizes: [usize; 3], seed: u64, version: u64) {
        for (agent, len) in self.agents.iter().zip(sizes) {
            let db = Kilo::random(len, seed + len as u64);
            let last_seq = num(&agent.record(), "last_seq");
            let previous = self.pushed.get(agent.id()).map(|p| p.sha256.as_str());
            let stored = agent.push_snapshot(&db, last_seq, previous);
            assert_eq!(
                stored["version"],
                json!(version),
                "{}: {stored}",
                agent.id()
            );
            assert_eq!(stored["event_watermark"], json!(last_seq));
            let storage = stored["storage"].as_str().unwrap_or_default();
            if len > 2_000_000 {
                assert_eq!(storage, "kv", "{len} bytes live in KV");
            } else {
                assert!(storage == "inline" || storage == "kv", "{stored}");
            }
            self.pushed.insert(agent.id().to_owned(), db);
        }
    }

    /// Steps 2 and 3: A is evicted and flushes; the user writes in the gap.
    fn container_a_dies_and_the_user_writes(&mut self) {
        let evicted = self.town.evict(A, "SIGTERM");
        assert_eq!(evicted["draining"], json!(true));
        assert_eq!(evicted["already_draining"], json!(false));
        self.push_snapshots([20_000_000, 3_000_000, 500_000], 200, 2);
        assert_eq!(
            self.town.evict(A, "SIGTERM")["already_draining"],
            json!(true)
        );
        let reply = self.town.mayor_message(GAP);
        assert_eq!(reply.expect_json(202), json!({"action": "deferred"}));
        let expected: Vec<Value> = Scenario::chat_turns()
            .into_iter()
            .chain([turn("user", GAP)])
            .collect();
        assert_eq!(turns(&self.mayor.conversation("")), expected, "persisted");
    }

    /// Step 5: a late heartbeat from A changes nothing.
    fn late_heartbeat_from_a(&self) {
        let late = self.town.heartbeat(A);
        assert_eq!(late["draining"], json!(true));
        assert_eq!(late["cleared_drain"], json!(false));
        assert_eq!(late["pending_dispatches"], json!([]));
        let state = self.town.get();
        assert_eq!(state["draining"], json!(true));
        assert_eq!(state["evicting_container_id"], json!(A));
    }

    /// Step 4: B boots; returns the registry and the dispatches it got.
    fn container_b_boots(&self) -> (Value, Vec<Value>) {
        let beat = self.town.heartbeat(B);
        assert_eq!(beat["draining"], json!(false));
        assert_eq!(beat["cleared_drain"], json!(true));
        assert_eq!(beat["registry"]["container_id"], json!(A));
        assert_eq!(beat["registry"]["agents"], self.registry_of_a());
        let state = self.town.get();
        assert_eq!(state["draining"], json!(false));
        assert_eq!(state["current_container_id"], json!(B));
        assert_eq!(state["mayor"], json!({"rig_id": "hq", "agent_id": "mayor"}));
        let pending = beat["pending_dispatches"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let again = self.town.heartbeat(B);
        assert_eq!(again["pending_dispatches"], json!([]), "released once");
        (beat["registry"].clone(), pending)
    }

    /// The Mayor's dispatch carries the checkpoint, the conversation with
    /// the gap message, and the metadata of its newest kilo.db.
    fn check_mayor_dispatch(&self, pending: &[Value]) {
        assert_eq!(pending.len(), 1, "one dispatch, the Mayor's: {pending:?}");
        let dispatch = &pending[0];
        let prompt = assert_dispatch_shape(dispatch);
        assert_eq!(dispatch["agent_id"], json!("mayor"));
        assert_eq!(dispatch["role"], json!("mayor"));
        assert_eq!(dispatch["checkpoint"], self.checkpoint);
        let mut expected = Scenario::chat_turns();
        expected.push(turn("user", GAP));
        assert_eq!(turns(&dispatch["prior_conversation"]), expected);
        let last_answer = CHAT[2].1.concat();
        assert_prompt(&prompt, &[CHAT[0].0, CHAT[2].0, &last_answer], GAP);
        let record = self.mayor.record();
        let snapshot = &dispatch["snapshot"];
        for field in ["version", "sha256", "size", "storage", "event_watermark"] {
            assert_eq!(
                snapshot[field], record["snapshot"][field],
                "snapshot.{field}"
            );
        }
        let mayor_db = &self.pushed["mayor"];
        assert_eq!(snapshot["sha256"], json!(mayor_db.sha256));
        assert_eq!(snapshot["size"], json!(mayor_db.bytes.len()));
        assert_eq!(snapshot["version"], json!(2));
    }

    /// B pulls every agent of the registry: each kilo.db byte-identical.
    fn container_b_hydrates(&self, registry: &Value) {
        let listed = registry["agents"].as_array().cloned().unwrap_or_default();
        assert_eq!(listed.len(), 3);
        for entry in listed {
            let id = entry["agent_id"].as_str().unwrap_or_default();
            let rig = entry["rig_id"].as_str().unwrap_or_default();
            let reply = self.town.agent(rig, id).snapshot_reply();
            assert_eq!(reply.status, 200, "{id}: {}", reply.text());
            let want = &self.pushed[id];
            assert_eq!(reply.header("x-stasis-sha256"), Some(want.sha256.as_str()));
            assert_eq!(reply.header("x-stasis-snapshot-version"), Some("2"));
            assert_eq!(reply.body.len(), want.bytes.len(), "{id}: size");
            // Equal bytes have equal sha256s; comparing the bytes is the
            // same check, without hashing 20 MB again in a debug build.
            assert!(
                reply.body == want.bytes,
                "{id}'s kilo.db hydrates byte-identical"
            );
        }
    }

    /// The town's log tells the story in order.
    fn check_town_log(&self) {
        let types = self.town.event_types();
        let expected = [
            "registry_updated",
            "container_eviction",
            "dispatch_deferred",
            "container_ready",
        ];
        let mut from = 0;
        for kind in expected {
            let at = types[from..]
                .iter()
                .position(|t| t == kind)
                .unwrap_or_else(|| panic!("{kind} after position {from} in {types:?}"));
            from += at + 1;
        }
        let evictions = types.iter().filter(|t| *t == "container_eviction").count();
        assert_eq!(
            evictions, 1,
            "a repeated eviction records nothing: {types:?}"
        );
    }

    /// After B registers its own sessions, the Mayor gets messages directly
    /// while B is alive (it heartbeats; the hydration above may outlast a
    /// short liveness timeout).
    fn container_b_takes_over(&self) {
        self.town.heartbeat(B);
        let agents = json!([
            {"agent_id": "mayor", "rig_id": "hq", "role": "mayor", "session_id": "ses-mayor-b", "port": 5096},
        ]);
        self.town.put_registry(B, agents);
        let answer = self.town.mayor_message("Thanks, carry on.").ok();
        assert_eq!(
            answer,
            json!({"action": "deliver", "session_id": "ses-mayor-b", "container_id": B})
        );
    }
}

#[test]
fn a_town_survives_its_container_being_replaced() {
    let mut scenario = Scenario::new();
    scenario.container_a_works();
    scenario.push_snapshots([20_000_000, 3_000_000, 500_000], 100, 1);
    scenario.container_a_dies_and_the_user_writes();
    scenario.late_heartbeat_from_a();
    let (registry, pending) = scenario.container_b_boots();
    scenario.check_mayor_dispatch(&pending);
    scenario.container_b_hydrates(&registry);
    scenario.check_town_log();
    scenario.container_b_takes_over();
}
