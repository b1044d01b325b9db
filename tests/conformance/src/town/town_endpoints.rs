//! [`Town`]: `/api/towns/{town}` — its state, eviction, heartbeats, container
//! registry, event log, agents and the Mayor — and [`TownState`], what a
//! reader can see of it.

use super::Agent;
use crate::{AgentLog, Reply, Value, call, events, json, num, unique_id};

/// A town: `/api/towns/{town}`.
#[derive(Debug, Clone)]
pub struct Town {
    /// The town id, fresh for each case.
    pub id: String,
}

/// Everything a reader can see of a town, to prove a refused request
/// changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct TownState {
    /// The `GET /api/towns/{town}` body.
    pub town: Value,
    /// The `GET /container-registry` body.
    pub registry: Value,
    /// Every event of the town's log, in order.
    pub events: Vec<Value>,
    /// The `GET /agents` list, sorted by rig and agent.
    pub agents: Vec<Value>,
}

impl Town {
    /// A town of its own, named after the case.
    pub fn fresh(case: &str) -> Town {
        Town {
            id: unique_id(case),
        }
    }

    /// The town's path followed by `suffix` (e.g. `/heartbeat`).
    pub fn path(&self, suffix: &str) -> String {
        format!("/api/towns/{}{suffix}", self.id)
    }

    /// Agent `agent` of rig `rig` in this town.
    pub fn agent(&self, rig: &str, agent: &str) -> Agent {
        Agent {
            log: AgentLog::new(&self.id, rig, agent),
        }
    }

    /// `GET /api/towns/{town}` and its 200 body.
    pub fn get(&self) -> Value {
        call("GET", &self.path("")).send().ok()
    }

    /// `POST /container-eviction` with this JSON body, whatever the outcome.
    pub fn evict_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/container-eviction"))
            .json(body)
            .send()
    }

    /// `POST /container-eviction` for `container` and its 202 body.
    pub fn evict(&self, container: &str, reason: &str) -> Value {
        self.evict_reply(&json!({"container_id": container, "reason": reason}))
            .expect_json(202)
    }

    /// `POST /heartbeat` with this JSON body, whatever the outcome.
    pub fn heartbeat_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/heartbeat")).json(body).send()
    }

    /// `POST /heartbeat` from `container` and its 200 body.
    pub fn heartbeat(&self, container: &str) -> Value {
        self.heartbeat_reply(&json!({ "container_id": container }))
            .ok()
    }

    /// `PUT /container-registry` with this JSON body, whatever the outcome.
    pub fn put_registry_reply(&self, body: &Value) -> Reply {
        call("PUT", &self.path("/container-registry"))
            .json(body)
            .send()
    }

    /// `PUT /container-registry` naming `agents` (a JSON array) in
    /// `container`, and its 200 body.
    pub fn put_registry(&self, container: &str, agents: Value) -> Value {
        self.put_registry_reply(&json!({"container_id": container, "agents": agents}))
            .ok()
    }

    /// `GET /container-registry` and its 200 body.
    pub fn registry(&self) -> Value {
        call("GET", &self.path("/container-registry")).send().ok()
    }

    /// `GET /events?{query}` of the town's log, whatever the outcome.
    pub fn events_reply(&self, query: &str) -> Reply {
        call("GET", &self.path(&format!("/events?{query}"))).send()
    }

    /// Every event of the town's log, paging with `next_after`.
    pub fn events(&self) -> Vec<Value> {
        let mut after = 0;
        let mut all = Vec::new();
        for _ in 0..10_000 {
            let page = self.events_reply(&format!("after={after}")).ok();
            all.extend(events(&page));
            if page.get("has_more") != Some(&Value::Bool(true)) {
                return all;
            }
            let next = num(&page, "next_after");
            assert!(
                next > after,
                "next_after must move forward: {after} → {next}"
            );
            after = next;
        }
        panic!("paging the town log never ended")
    }

    /// The types of the town's events, in order.
    pub fn event_types(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The town's events of type `kind`, in order.
    pub fn events_of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["type"] == json!(kind))
            .collect()
    }

    /// `GET /agents`: the town's agents sorted by rig and agent.
    pub fn agents(&self) -> Vec<Value> {
        let body = call("GET", &self.path("/agents")).send().ok();
        let mut agents = body["agents"]
            .as_array()
            .unwrap_or_else(|| panic!("GET /agents has an agents array: {body}"))
            .clone();
        agents.sort_by_key(|a| (a["rig_id"].to_string(), a["agent_id"].to_string()));
        agents
    }

    /// `POST /mayor/message` with `text`, whatever the outcome.
    pub fn mayor_message(&self, text: &str) -> Reply {
        call("POST", &self.path("/mayor/message"))
            .json(&json!({ "text": text }))
            .send()
    }

    /// What a reader sees of the town now; `container_alive` is left out
    /// of `town`: it turns false with time alone, nothing a request did.
    pub fn state(&self) -> TownState {
        let mut town = self.get();
        if let Some(fields) = town.as_object_mut() {
            fields.remove("container_alive");
        }
        TownState {
            town,
            registry: self.registry(),
            events: self.events(),
            agents: self.agents(),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &TownState) {
        assert_eq!(
            &self.state(),
            before,
            "a refused request must change nothing"
        );
    }
}
