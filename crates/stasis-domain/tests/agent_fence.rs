//! Fencing on an agent's side: once a newer container has written to an
//! agent, a write carrying an older container's epoch changes nothing there,
//! whatever the town told that container earlier.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use stasis_domain::{
    DomainError,
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    agent_state::StateCall,
    event_log::{AppendBatch, NewEvent, ReadQuery},
    fence::{FENCED, Fence},
    sql::SqlStore,
};
use stasis_sqlite::SqliteStore;

struct Agent {
    store: SqliteStore,
}

impl Agent {
    fn new() -> Self {
        let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
        agent::migrate(&store).expect("schema applies");
        Self { store }
    }

    /// One call in its own transaction, as a runtime runs it.
    fn call(&self, call: AgentCall, fence: Option<&Fence>) -> Result<AgentReply, DomainError> {
        let env = ObjectEnv {
            now_ms: 1_700_000_000_000,
            max_events: 100,
            retention: Default::default(),
        };
        self.store.run("BEGIN", Vec::new()).expect("begin");
        let reply = agent::execute_fenced(&self.store, &call, &env, fence);
        let end = if reply.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.store.run(end, Vec::new()).expect("end transaction");
        reply
    }

    fn append(&self, fence: Option<&Fence>) -> Result<AgentReply, DomainError> {
        let batch = AppendBatch::new(vec![NewEvent::new("t", None, "{}")]);
        self.call(AgentCall::AppendEvents(batch), fence)
    }

    fn last_seq(&self) -> u64 {
        match self
            .call(AgentCall::ReadEvents(ReadQuery::after(0)), None)
            .expect("read")
        {
            AgentReply::Events(page) => page.last_seq,
            other => panic!("unexpected reply {other:?}"),
        }
    }
}

fn fence(container_id: &str, epoch: u64) -> Fence {
    Fence {
        container_id: container_id.into(),
        epoch,
    }
}

#[test]
fn a_write_older_than_the_newest_epoch_seen_is_refused_and_changes_nothing() {
    let agent = Agent::new();
    agent.append(Some(&fence("a", 1))).expect("a writes");
    agent.append(Some(&fence("b", 2))).expect("b writes");
    let refused = agent.append(Some(&fence("a", 1)));
    match refused {
        Err(DomainError::Fenced(refusal)) => {
            assert_eq!(refusal.code, FENCED);
            assert_eq!(refusal.current_container_id.as_deref(), Some("b"));
        }
        other => panic!("expected container_fenced, got {other:?}"),
    }
    assert_eq!(agent.last_seq(), 2);
    let checkpoint = StateCall::PutCheckpoint {
        document: "{}".into(),
    };
    assert!(matches!(
        agent.call(AgentCall::State(checkpoint), Some(&fence("a", 1))),
        Err(DomainError::Fenced(_))
    ));
}

#[test]
fn reads_and_writes_of_the_newest_epoch_pass() {
    let agent = Agent::new();
    agent.append(Some(&fence("b", 2))).expect("b writes");
    agent.append(Some(&fence("b", 2))).expect("b writes again");
    let read = agent.call(
        AgentCall::ReadEvents(ReadQuery::after(0)),
        Some(&fence("a", 1)),
    );
    assert!(read.is_ok(), "reads stay allowed: {read:?}");
    agent
        .append(Some(&fence("c", 3)))
        .expect("a newer container writes");
    assert_eq!(agent.last_seq(), 3);
}

#[test]
fn a_refused_write_does_not_raise_the_epoch() {
    let agent = Agent::new();
    agent.append(Some(&fence("a", 1))).expect("a writes");
    // A write that fails on its own (an unknown session) rolls back the
    // epoch it brought, so the container it came from is not fenced yet.
    let refused = agent.call(
        AgentCall::State(StateCall::DeleteSession {
            session_id: "none".into(),
        }),
        Some(&fence("b", 2)),
    );
    assert!(matches!(refused, Err(DomainError::NotFound(_))));
    agent.append(Some(&fence("a", 1))).expect("a still writes");
}

#[test]
fn destroying_the_agent_keeps_it_fenced() {
    let agent = Agent::new();
    agent.append(Some(&fence("b", 2))).expect("b writes");
    agent
        .call(AgentCall::State(StateCall::DestroyAgent), None)
        .expect("destroy");
    assert!(matches!(
        agent.append(Some(&fence("a", 1))),
        Err(DomainError::Fenced(_))
    ));
}

#[test]
fn an_unfenced_write_is_not_checked() {
    let agent = Agent::new();
    agent.append(Some(&fence("b", 2))).expect("b writes");
    agent.append(None).expect("an admin or town token writes");
}
