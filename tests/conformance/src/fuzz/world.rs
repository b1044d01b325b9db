//! A fuzzed world: one fresh town with a Mayor and three other agents,
//! seeded with events, a checkpoint, memory, a snapshot, a heartbeat and a
//! registry, and what the fuzz has learnt about it since (producer stamps,
//! snapshot ETags).

use std::collections::HashMap;

use fastrand::Rng;

use super::values;
use crate::town::{Agent, Town};
use crate::{Reply, json};

/// Session ids the fuzz's events and requests use.
pub const SESSIONS: [&str; 3] = ["s-1", "s-2", "ses_01JZ:x.y"];
/// Memory keys the fuzz's requests use.
pub const MEMORY_KEYS: [&str; 3] = ["k-1", "notes.a", "x:y"];
/// Roles; the first is the Mayor's.
pub const ROLES: &[&str] = &["mayor", "polecat", "refinery", "witness"];
/// Producer ids the fuzz's appends are stamped with.
const PRODUCERS: [&str; 2] = ["p-1", "p-2"];

/// One town and its agents, fuzzed by one thread.
#[derive(Debug)]
pub struct World {
    /// The town, fresh for this run.
    pub town: Town,
    /// Its agents; the first is registered as the Mayor.
    pub agents: Vec<Agent>,
    containers: Vec<String>,
    next_stamp: HashMap<&'static str, u64>,
    etags: HashMap<usize, String>,
}

impl World {
    /// A fresh town with its agents seeded.
    ///
    /// # Panics
    /// When the server refuses the seeding requests.
    pub fn seeded(index: usize) -> World {
        let town = Town::fresh(&format!("fuzz-{index}"));
        let agents = vec![
            town.agent("rig-a", "mayor"),
            town.agent("rig-a", "polecat-1"),
            town.agent("rig-b", "refinery"),
            town.agent("rig.b:2", "polecat_2"),
        ];
        let world = World {
            containers: (0..3).map(|c| format!("container-{index}-{c}")).collect(),
            town,
            agents,
            next_stamp: HashMap::new(),
            etags: HashMap::new(),
        };
        world.seed();
        world
    }

    fn seed(&self) {
        self.town.heartbeat(&self.containers[0]);
        for (i, agent) in self.agents.iter().enumerate() {
            agent.register(ROLES[i % ROLES.len()]);
            let events = json!([
                {"type": "message.updated", "session_id": SESSIONS[0],
                 "data": {"info": {"id": format!("m{i}"), "role": "user"}}},
                {"type": "message.part.updated", "session_id": SESSIONS[0],
                 "data": {"part": {"id": "p1", "messageID": format!("m{i}"), "type": "text", "text": "hello"}}},
            ]);
            agent.log.append(events);
            agent.put_checkpoint(&json!({"step": i}));
            agent.put_memory(MEMORY_KEYS[0], &json!({"seeded": i}));
        }
        self.agents[0].put_snapshot(b"a small kilo.db", 2);
        let registry: Vec<_> = self
            .agents
            .iter()
            .map(|a| json!({"agent_id": a.id(), "rig_id": a.log.rig, "role": "polecat"}))
            .collect();
        self.town.put_registry(&self.containers[0], json!(registry));
    }

    /// One of the world's container ids (now and then one never seen).
    pub fn container(&self, rng: &mut Rng) -> String {
        match rng.usize(..=self.containers.len()) {
            n if n < self.containers.len() => self.containers[n].clone(),
            _ => format!("stranger-{}", rng.u16(..)),
        }
    }

    /// A producer stamp: mostly the producer's next seq, sometimes a retry
    /// of one already sent (which must append nothing).
    pub fn stamp(&mut self, rng: &mut Rng) -> (&'static str, u64) {
        let producer = PRODUCERS[rng.usize(..PRODUCERS.len())];
        let next = self.next_stamp.entry(producer).or_insert(0);
        if *next > 0 && rng.u8(..3) == 0 {
            return (producer, rng.u64(..*next));
        }
        *next += 1;
        (producer, *next - 1)
    }

    /// The quoted ETag of the agent's newest acknowledged snapshot, if the
    /// fuzz has seen one.
    pub fn etag(&self, agent: usize) -> Option<String> {
        self.etags.get(&agent).map(|sha| format!("\"{sha}\""))
    }

    /// Learns from an accepted request's answer (a new snapshot's sha256).
    pub fn learn(&mut self, agent: Option<usize>, reply: &Reply) {
        if let Some(agent) = agent
            && reply.status == 201
            && let Some(sha) = reply.header("etag")
        {
            self.etags.insert(agent, sha.trim_matches('"').to_owned());
        }
    }

    /// A memory key or session id of the world, or a fresh valid one.
    pub fn id(rng: &mut Rng, known: &[&str]) -> String {
        if rng.u8(..5) == 0 {
            format!("fresh-{}", rng.u32(..))
        } else {
            values::pick(rng, known).to_owned()
        }
    }
}
