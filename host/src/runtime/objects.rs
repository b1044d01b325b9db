//! The host's [`Objects`] port: a pool of agent objects on disk.

use super::{agent_object::AgentObject, components::Components};
use stasis_api::Objects;
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    ids::AgentKey,
};
use stasis_sqlite::Durability;
use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// Every object this host has opened, by key. Cheap to clone.
#[derive(Clone)]
pub struct HostObjects {
    inner: Arc<Inner>,
}

struct Inner {
    components: Arc<Components>,
    data_dir: PathBuf,
    durability: Durability,
    max_events: u64,
    agents: Mutex<HashMap<AgentKey, Arc<AgentObject>>>,
}

impl HostObjects {
    /// A pool over `data_dir`.
    pub fn new(
        components: Components,
        data_dir: PathBuf,
        durability: Durability,
        max_events: u64,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                components: Arc::new(components),
                data_dir,
                durability,
                max_events,
                agents: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The agent's object, created in memory on first use.
    fn agent_object(&self, key: &AgentKey) -> Arc<AgentObject> {
        let mut agents = self
            .inner
            .agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Arc::clone(agents.entry(key.clone()).or_insert_with(|| {
            Arc::new(AgentObject::new(
                self.agent_path(key),
                self.inner.durability,
            ))
        }))
    }

    /// `<data>/towns/<town>/rigs/<rig>/agents/<agent>/agent.sqlite`. Ids are
    /// validated (no `/`, not `.` or `..`), so each is one path segment.
    fn agent_path(&self, key: &AgentKey) -> PathBuf {
        self.inner
            .data_dir
            .join("towns")
            .join(&key.town)
            .join("rigs")
            .join(&key.rig)
            .join("agents")
            .join(&key.agent)
            .join("agent.sqlite")
    }
}

impl Objects for HostObjects {
    async fn agent(&self, key: &AgentKey, call: AgentCall) -> Result<AgentReply, DomainError> {
        let env = ObjectEnv {
            now_ms: self.now_ms(),
            max_events: self.inner.max_events,
        };
        self.agent_object(key)
            .call(&self.inner.components, call, env)
            .await
    }

    async fn wait_for_events(&self, key: &AgentKey, last_seq: u64, timeout: Duration) {
        let mut seqs = self.agent_object(key).watch_last_seq();
        let _ = tokio::time::timeout(timeout, seqs.wait_for(|seq| *seq > last_seq)).await;
    }

    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}
