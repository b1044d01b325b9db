//! The town the boot and drain tests start from: container A's agents, pushed, then evicted.

use std::path::Path;

use serde_json::{Value, json};
use stasis_client::AgentRef;
use stasis_client::boot::kilo_db_path;
use stasis_client::snapshot::{self, PushOptions, PushReceipt};
use stasis_client::town::{self, RegisteredAgent};

use crate::helpers::{call, client, create_db, rows_for};
use crate::support::Server;

/// One agent of the test town.
pub struct Member {
    pub agent_id: &'static str,
    pub rig_id: &'static str,
    pub role: &'static str,
    pub session_id: &'static str,
    /// Its kilo.db size in container A (`None`: it never wrote one).
    pub db_bytes: Option<u64>,
}

pub const MEMBERS: [Member; 4] = [
    Member {
        agent_id: "mayor",
        rig_id: "hq",
        role: "mayor",
        session_id: "ses-mayor",
        db_bytes: Some(3_000_000),
    },
    Member {
        agent_id: "polecat-1",
        rig_id: "main",
        role: "polecat",
        session_id: "ses-p1",
        db_bytes: Some(1_500_000),
    },
    Member {
        agent_id: "polecat-2",
        rig_id: "main",
        role: "polecat",
        session_id: "ses-p2",
        db_bytes: Some(100_000),
    },
    Member {
        agent_id: "refinery",
        rig_id: "main",
        role: "refinery",
        session_id: "ses-r",
        db_bytes: None,
    },
];

/// What container A left behind.
pub struct Town {
    pub name: &'static str,
    pub container_a: String,
    /// One receipt per member with a kilo.db, in `MEMBERS` order (`None` for the others).
    pub receipts: Vec<Option<PushReceipt>>,
    pub checkpoint: Value,
}

impl Town {
    fn agent(&self, member: &Member) -> AgentRef {
        AgentRef::new(self.name, member.rig_id, member.agent_id).expect("ids")
    }
}

/// Container A: heartbeat, agent records, registry, the Mayor's chat and checkpoint, and a
/// kilo.db per member pushed from A's agent homes under `root_a`.
pub fn container_a_runs(server: &Server, name: &'static str, root_a: &Path) -> Town {
    let client = client(server);
    let container_a = town::new_container_id();
    town::heartbeat(&client, name, &container_a, None).expect("A's heartbeat");
    let mut registered = Vec::new();
    for member in &MEMBERS {
        let path = format!(
            "/api/towns/{name}/rigs/{}/agents/{}",
            member.rig_id, member.agent_id
        );
        let (status, _) = call(server, "PUT", &path, Some(&json!({"role": member.role})));
        assert_eq!(status, 201, "registering {}", member.agent_id);
        registered.push(RegisteredAgent {
            agent_id: member.agent_id.into(),
            rig_id: member.rig_id.into(),
            role: member.role.into(),
            session_id: Some(member.session_id.into()),
            port: Some(4100),
        });
    }
    let registry =
        town::put_registry(&client, name, &container_a, &registered, None).expect("A's registry");
    assert_eq!(registry.container_id.as_deref(), Some(container_a.as_str()));
    assert_eq!(registry.agents, registered);

    let mayor = format!("/api/towns/{name}/rigs/hq/agents/mayor");
    let chat = json!({"events": [
        {"type": "message.completed", "session_id": "ses-mayor",
         "data": {"info": {"id": "u1", "role": "user"}, "part": {"id": "u1p", "text": "plan the release"}}},
        {"type": "message.completed", "session_id": "ses-mayor",
         "data": {"info": {"id": "a1", "role": "assistant"}, "part": {"id": "a1p", "text": "three polecats, one refinery"}}},
    ]});
    let (status, _) = call(server, "POST", &format!("{mayor}/events"), Some(&chat));
    assert_eq!(status, 200);
    let checkpoint = json!({"step": 3, "plan": "three polecats, one refinery"});
    let (status, _) = call(
        server,
        "PUT",
        &format!("{mayor}/checkpoint"),
        Some(&checkpoint),
    );
    assert_eq!(status, 200);

    let mut town = Town {
        name,
        container_a,
        receipts: Vec::new(),
        checkpoint,
    };
    for member in &MEMBERS {
        let receipt = member.db_bytes.map(|bytes| {
            let live = kilo_db_path(root_a, member.agent_id);
            create_db(&live, rows_for(bytes), "wal");
            let receipt =
                snapshot::push(&client, &town.agent(member), &live, &PushOptions::default())
                    .expect("A pushes its kilo.db");
            let storage = if bytes > 1_048_576 { "kv" } else { "inline" };
            assert_eq!(
                receipt.storage.as_deref(),
                Some(storage),
                "{}",
                member.agent_id
            );
            receipt
        });
        town.receipts.push(receipt);
    }
    town
}

/// A's SIGTERM: the eviction, then the user messages the Mayor during the gap.
pub fn container_a_is_evicted(server: &Server, town: &Town, gap_message: &str) {
    let client = client(server);
    town::evict(&client, town.name, &town.container_a, "sigterm", None).expect("eviction");
    let (status, answer) = call(
        server,
        "POST",
        &format!("/api/towns/{}/mayor/message", town.name),
        Some(&json!({"text": gap_message})),
    );
    assert_eq!((status, answer), (202, json!({"action": "deferred"})));
    let late = town::heartbeat(&client, town.name, &town.container_a, None).expect("late beat");
    assert!(
        late.draining && !late.cleared_drain,
        "a late heartbeat does not end the drain"
    );
    assert!(late.pending_dispatches.is_empty());
}
