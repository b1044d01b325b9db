//! Shared helpers: a town driven one transaction per call, and agents and
//! registries to feed it.

use stasis_domain::DomainError;
use stasis_domain::sql::SqlStore;
use stasis_domain::town::{
    self, EvictOutcome, HeartbeatOutcome, MayorAction, Registry, RegistryAgent, TownAgent,
    TownCall, TownEnv, TownEvent, TownEventPage, TownReply, TownState, log,
};
use stasis_sqlite::SqliteStore;

/// A town object as a runtime drives it: one transaction per call.
pub(crate) struct Town {
    pub(crate) store: SqliteStore,
    pub(crate) now_ms: i64,
}

impl Town {
    pub(crate) fn new() -> Self {
        let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
        town::migrate(&store).expect("schema applies");
        Self {
            store,
            now_ms: 1_700_000_000_000,
        }
    }

    pub(crate) fn call(&mut self, call: TownCall) -> Result<TownReply, DomainError> {
        self.now_ms += 1;
        let env = TownEnv {
            now_ms: self.now_ms,
        };
        self.store.run("BEGIN", Vec::new()).expect("begin");
        let reply = town::execute(&self.store, &call, &env);
        let end = if reply.is_ok() { "COMMIT" } else { "ROLLBACK" };
        self.store.run(end, Vec::new()).expect("end transaction");
        reply
    }

    pub(crate) fn state(&mut self) -> TownState {
        match self.call(TownCall::GetState).expect("get state") {
            TownReply::State(state) => state,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn evict(&mut self, container_id: &str) -> EvictOutcome {
        let call = TownCall::Evict {
            container_id: Some(container_id.into()),
            reason: Some("SIGTERM".into()),
        };
        match self.call(call).expect("evict") {
            TownReply::Evicted(outcome) => outcome,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn heartbeat(&mut self, container_id: &str) -> HeartbeatOutcome {
        self.heartbeat_with_key(container_id, None)
    }

    pub(crate) fn heartbeat_with_key(
        &mut self,
        container_id: &str,
        idempotency_key: Option<&str>,
    ) -> HeartbeatOutcome {
        let call = TownCall::Heartbeat {
            container_id: container_id.into(),
            idempotency_key: idempotency_key.map(str::to_owned),
        };
        match self.call(call).expect("heartbeat") {
            TownReply::Heartbeat(outcome) => outcome,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn register(
        &mut self,
        rig_id: &str,
        agent_id: &str,
        role: &str,
    ) -> Result<bool, DomainError> {
        let call = TownCall::RegisterAgent {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
            role: role.into(),
        };
        match self.call(call)? {
            TownReply::Registered(registered) => Ok(registered.created),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn put_registry(
        &mut self,
        container_id: &str,
        agents: Vec<RegistryAgent>,
    ) -> Result<Registry, DomainError> {
        let call = TownCall::PutRegistry {
            container_id: container_id.into(),
            agents,
        };
        match self.call(call)? {
            TownReply::Registry(registry) => Ok(registry),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn get_registry(&mut self) -> Registry {
        match self.call(TownCall::GetRegistry).expect("get registry") {
            TownReply::Registry(registry) => registry,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// A message for the mayor, with the default liveness timeout.
    pub(crate) fn mayor_message(&mut self, message_seq: u64) -> Result<MayorAction, DomainError> {
        let call = TownCall::MayorMessage {
            message_seq,
            liveness_timeout_ms: town::DEFAULT_LIVENESS_TIMEOUT_MS,
        };
        match self.call(call)? {
            TownReply::MayorMessage(action) => Ok(action),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// A message for any agent's inbox, with the default liveness timeout.
    pub(crate) fn agent_message(
        &mut self,
        rig_id: &str,
        agent_id: &str,
        message_seq: u64,
    ) -> Result<MayorAction, DomainError> {
        let call = TownCall::AgentMessage {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
            message_seq,
            liveness_timeout_ms: town::DEFAULT_LIVENESS_TIMEOUT_MS,
        };
        match self.call(call)? {
            TownReply::MayorMessage(action) => Ok(action),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn put_registry_agent(
        &mut self,
        container_id: &str,
        agent: RegistryAgent,
    ) -> Result<Registry, DomainError> {
        let call = TownCall::PutRegistryAgent {
            container_id: container_id.into(),
            agent,
        };
        match self.call(call)? {
            TownReply::Registry(registry) => Ok(registry),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn remove_registry_agent(&mut self, rig_id: &str, agent_id: &str) -> Registry {
        let call = TownCall::RemoveRegistryAgent {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
        };
        match self.call(call).expect("remove an entry") {
            TownReply::Registry(registry) => registry,
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn dispatch(
        &mut self,
        rig_id: &str,
        agent_id: &str,
    ) -> Result<TownAgent, DomainError> {
        let call = TownCall::Dispatch {
            rig_id: rig_id.into(),
            agent_id: agent_id.into(),
        };
        match self.call(call)? {
            TownReply::Dispatched(agent) => Ok(agent),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    pub(crate) fn read(&mut self, after: u64, limit: u64) -> Result<TownEventPage, DomainError> {
        match self.call(TownCall::ReadEvents { after, limit })? {
            TownReply::Events(page) => Ok(page),
            other => panic!("unexpected reply {other:?}"),
        }
    }

    /// Every retained event, oldest first.
    pub(crate) fn events(&mut self) -> Vec<TownEvent> {
        let first = self
            .read(0, 1)
            .map(|p| p.first_seq)
            .unwrap_or_else(|err| match err {
                DomainError::CursorExpired { first_seq } => first_seq,
                other => panic!("unexpected error {other:?}"),
            });
        let mut after = first.saturating_sub(1);
        let mut all = Vec::new();
        loop {
            let page = self.read(after, 1_000).expect("read events");
            all.extend(page.events);
            after = page.next_after;
            if !page.has_more {
                return all;
            }
        }
    }

    pub(crate) fn events_of(&mut self, event_type: &str) -> Vec<TownEvent> {
        self.events()
            .into_iter()
            .filter(|e| e.event_type == event_type)
            .collect()
    }
}

pub(crate) fn agent(rig_id: &str, agent_id: &str, role: &str) -> TownAgent {
    TownAgent {
        rig_id: rig_id.into(),
        agent_id: agent_id.into(),
        role: role.into(),
    }
}

pub(crate) fn running(
    rig_id: &str,
    agent_id: &str,
    role: &str,
    session: Option<&str>,
) -> RegistryAgent {
    RegistryAgent {
        agent_id: agent_id.into(),
        rig_id: rig_id.into(),
        role: role.into(),
        session_id: session.map(str::to_owned),
        port: Some(4096),
    }
}

/// A town with a mayor and two polecats registered.
pub(crate) fn town_with_agents() -> Town {
    let mut town = Town::new();
    town.register("hq", "mayor", "mayor").expect("mayor");
    town.register("rig1", "polecat-1", "polecat")
        .expect("polecat");
    town.register("rig1", "polecat-2", "polecat")
        .expect("polecat");
    town
}

pub(crate) fn a_registry() -> Vec<RegistryAgent> {
    vec![
        running("hq", "mayor", "mayor", Some("ses-1")),
        running("rig1", "polecat-1", "polecat", None),
        running("rig1", "polecat-2", "polecat", None),
    ]
}

pub(crate) fn released_reason_count(town: &mut Town) -> usize {
    town.events_of(log::DISPATCH_AGENT)
        .iter()
        .filter(|e| e.data["reason"] == "released")
        .count()
}
