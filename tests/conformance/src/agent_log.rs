//! One agent's event log and sessions, reached with an admin token.

use crate::{Reply, Value, call, events, json, num, unique_id};

/// An agent in a town of its own: `/api/towns/{town}/rigs/{rig}/agents/{agent}`.
#[derive(Debug, Clone)]
pub struct AgentLog {
    /// The town id, fresh for each case.
    pub town: String,
    /// The rig id.
    pub rig: String,
    /// The agent id.
    pub agent: String,
}

/// Everything a read can see of an agent, to prove a refused request
/// changed nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct LogState {
    /// Every kept event, in order.
    pub events: Vec<Value>,
    /// The oldest seq kept (0 while empty).
    pub first_seq: u64,
    /// The newest seq assigned (0 while empty).
    pub last_seq: u64,
    /// The `GET /sessions` body.
    pub sessions: Value,
}

impl AgentLog {
    /// An agent in a fresh town named after the case.
    pub fn fresh(case: &str) -> AgentLog {
        AgentLog::new(&unique_id(case), "rig-1", "agent-1")
    }

    /// The agent `agent` of rig `rig` in town `town`.
    pub fn new(town: &str, rig: &str, agent: &str) -> AgentLog {
        AgentLog {
            town: town.to_owned(),
            rig: rig.to_owned(),
            agent: agent.to_owned(),
        }
    }

    /// Another agent of the same town and rig.
    pub fn sibling(&self, agent: &str) -> AgentLog {
        AgentLog::new(&self.town, &self.rig, agent)
    }

    /// The agent's path followed by `suffix` (e.g. `/events?after=3`).
    pub fn path(&self, suffix: &str) -> String {
        format!(
            "/api/towns/{}/rigs/{}/agents/{}{suffix}",
            self.town, self.rig, self.agent
        )
    }

    /// `POST /events` with this JSON body, whatever the outcome.
    pub fn post(&self, body: &Value) -> Reply {
        call("POST", &self.path("/events")).json(body).send()
    }

    /// Appends `events` (a JSON array) and returns the 200 body.
    pub fn append(&self, events: Value) -> Value {
        self.post(&json!({ "events": events })).ok()
    }

    /// Appends `events` with a producer stamp and returns the 200 body.
    pub fn append_stamped(&self, events: Value, producer_id: &str, producer_seq: u64) -> Value {
        let body =
            json!({"events": events, "producer_id": producer_id, "producer_seq": producer_seq});
        self.post(&body).ok()
    }

    /// `GET /events?{query}`, whatever the outcome.
    pub fn read_reply(&self, query: &str) -> Reply {
        call("GET", &self.path(&format!("/events?{query}"))).send()
    }

    /// `GET /events?{query}` and its 200 body.
    pub fn read(&self, query: &str) -> Value {
        self.read_reply(query).ok()
    }

    /// Every event after `after`, paging with `next_after`; `filter` is
    /// appended to each query (e.g. `&type=x`).
    pub fn read_all(&self, after: u64, filter: &str) -> Vec<Value> {
        let mut after = after;
        let mut all = Vec::new();
        for _ in 0..100_000 {
            let page = self.read(&format!("after={after}&limit=10000{filter}"));
            all.extend(events(&page));
            let next = num(&page, "next_after");
            if page.get("has_more") != Some(&Value::Bool(true)) {
                return all;
            }
            assert!(
                next > after,
                "next_after must move forward while has_more: {after} → {next}"
            );
            after = next;
        }
        panic!("paging never ended")
    }

    /// `GET /sessions` and its 200 body.
    pub fn sessions(&self) -> Value {
        call("GET", &self.path("/sessions")).send().ok()
    }

    /// What a reader sees now.
    pub fn state(&self) -> LogState {
        let page = self.read("after=0&limit=10000");
        assert_eq!(
            page.get("has_more"),
            Some(&Value::Bool(false)),
            "state() is meant for logs under 10,000 events"
        );
        LogState {
            events: events(&page),
            first_seq: num(&page, "first_seq"),
            last_seq: num(&page, "last_seq"),
            sessions: self.sessions(),
        }
    }

    /// Asserts a reader sees exactly `before`: the refused request changed nothing.
    pub fn assert_unchanged(&self, before: &LogState) {
        let now = self.state();
        assert_eq!(&now, before, "a refused request must change nothing");
    }
}
