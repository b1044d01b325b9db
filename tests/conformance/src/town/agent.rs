//! [`Agent`]: one agent's record, checkpoint, memory, conversation, export /
//! import and dispatch, and [`AgentState`], what a reader can see of it.

use super::Town;
use crate::{AgentLog, LogState, Reply, Value, call, json};

/// One agent: `/api/towns/{town}/rigs/{rig}/agents/{agent}` and everything
/// under it. `log` reaches its events and sessions.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The agent's event log, with its town, rig and agent ids.
    pub log: AgentLog,
}

/// Everything a reader can see of an agent, to prove a refused request
/// changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentState {
    /// Status and body of `GET` on the agent (404 while unregistered).
    pub record: (u16, Value),
    /// Its events and sessions.
    pub log: LogState,
    /// Status and body of `GET /checkpoint`.
    pub checkpoint: (u16, Value),
    /// The `GET /memory?limit=1000` body.
    pub memory: Value,
    /// Status, `X-Stasis-Sha256` and `X-Stasis-Snapshot-Version` of `GET /db-snapshot`.
    pub snapshot: (u16, Option<String>, Option<String>),
}

impl Agent {
    /// `agent-1` of `rig-1` in a fresh town named after the case.
    pub fn fresh(case: &str) -> Agent {
        Town::fresh(case).agent("rig-1", "agent-1")
    }

    /// The agent's path followed by `suffix` (e.g. `/checkpoint`).
    pub fn path(&self, suffix: &str) -> String {
        self.log.path(suffix)
    }

    /// The agent's town.
    pub fn town(&self) -> Town {
        Town {
            id: self.log.town.clone(),
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.log.agent
    }

    /// Another agent of the same town and rig.
    pub fn sibling(&self, agent: &str) -> Agent {
        Agent {
            log: self.log.sibling(agent),
        }
    }

    /// `PUT` on the agent with this JSON body, whatever the outcome.
    pub fn register_reply(&self, body: &Value) -> Reply {
        call("PUT", &self.path("")).json(body).send()
    }

    /// Registers the agent with `role` (200 or 201) and returns the record.
    pub fn register(&self, role: &str) -> Value {
        let reply = self.register_reply(&json!({ "role": role }));
        assert!(
            reply.status == 200 || reply.status == 201,
            "registering as {role}: {} {}",
            reply.status,
            reply.text()
        );
        reply.json()
    }

    /// `GET` on the agent, whatever the outcome.
    pub fn record_reply(&self) -> Reply {
        call("GET", &self.path("")).send()
    }

    /// `GET` on the agent and its 200 body.
    pub fn record(&self) -> Value {
        self.record_reply().ok()
    }

    /// `PUT /checkpoint` with `doc` and its 200 body.
    pub fn put_checkpoint(&self, doc: &Value) -> Value {
        call("PUT", &self.path("/checkpoint")).json(doc).send().ok()
    }

    /// `GET /checkpoint`, whatever the outcome.
    pub fn checkpoint_reply(&self) -> Reply {
        call("GET", &self.path("/checkpoint")).send()
    }

    /// `PUT /memory/{key}` with `value` and its 200 body.
    pub fn put_memory(&self, key: &str, value: &Value) -> Value {
        call("PUT", &self.path(&format!("/memory/{key}")))
            .json(value)
            .send()
            .ok()
    }

    /// `GET /memory/{key}`, whatever the outcome.
    pub fn memory_reply(&self, key: &str) -> Reply {
        call("GET", &self.path(&format!("/memory/{key}"))).send()
    }

    /// `GET /memory?{query}` and its 200 body.
    pub fn memory_list(&self, query: &str) -> Value {
        call("GET", &self.path(&format!("/memory?{query}")))
            .send()
            .ok()
    }

    /// The keys `GET /memory?{query}` lists, in order.
    pub fn memory_keys(&self, query: &str) -> Vec<String> {
        let body = self.memory_list(query);
        body["entries"]
            .as_array()
            .unwrap_or_else(|| panic!("GET /memory has an entries array: {body}"))
            .iter()
            .map(|e| e["key"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// `GET /conversation?{query}`, whatever the outcome.
    pub fn conversation_reply(&self, query: &str) -> Reply {
        call("GET", &self.path(&format!("/conversation?{query}"))).send()
    }

    /// `GET /conversation?{query}` and its 200 body.
    pub fn conversation(&self, query: &str) -> Value {
        self.conversation_reply(query).ok()
    }

    /// `GET /export` and its 200 body.
    pub fn export(&self) -> Value {
        call("GET", &self.path("/export")).send().ok()
    }

    /// `PUT /import` with this manifest, whatever the outcome.
    pub fn import_reply(&self, manifest: &Value) -> Reply {
        call("PUT", &self.path("/import")).json(manifest).send()
    }

    /// `POST /dispatch` with this JSON body, whatever the outcome.
    pub fn dispatch_reply(&self, body: &Value) -> Reply {
        call("POST", &self.path("/dispatch")).json(body).send()
    }

    /// What a reader sees of the agent now.
    pub fn state(&self) -> AgentState {
        let record = self.record_reply();
        let checkpoint = self.checkpoint_reply();
        let snapshot = self.snapshot_reply();
        let header = |name: &str| snapshot.header(name).map(str::to_owned);
        AgentState {
            record: (record.status, record.json()),
            log: self.log.state(),
            checkpoint: (checkpoint.status, checkpoint.json()),
            memory: self.memory_list("limit=1000"),
            snapshot: (
                snapshot.status,
                header("x-stasis-sha256"),
                header("x-stasis-snapshot-version"),
            ),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &AgentState) {
        assert_eq!(
            &self.state(),
            before,
            "a refused request must change nothing"
        );
    }
}
