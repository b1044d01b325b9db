//! The wire: reads are not writes; calls and replies survive JSON.

use crate::support::town_with_agents;
use stasis_domain::limits;
use stasis_domain::town::{self, MayorAction, TownCall, TownReply};

#[test]
fn only_reads_are_not_writes() {
    let reads = [
        TownCall::GetState,
        TownCall::GetRegistry,
        TownCall::ReadEvents { after: 0, limit: 1 },
        TownCall::ListAgents,
    ];
    assert!(reads.iter().all(|call| !town::is_write(call)));
    let writes = [
        TownCall::Evict {
            container_id: Some("c".into()),
            reason: None,
        },
        TownCall::Heartbeat {
            container_id: "c".into(),
            idempotency_key: None,
        },
        TownCall::PutRegistry {
            container_id: "c".into(),
            agents: vec![],
        },
        TownCall::RegisterAgent {
            rig_id: "r".into(),
            agent_id: "a".into(),
            role: "mayor".into(),
        },
        TownCall::ForgetAgent {
            rig_id: "r".into(),
            agent_id: "a".into(),
        },
        TownCall::MayorMessage {
            message_seq: 1,
            liveness_timeout_ms: 60_000,
        },
        TownCall::Dispatch {
            rig_id: "r".into(),
            agent_id: "a".into(),
        },
    ];
    assert!(writes.iter().all(town::is_write));
}

#[test]
fn calls_and_replies_survive_json_in_the_documented_shapes() {
    assert_eq!(
        json(&TownCall::GetState),
        serde_json::json!({"op": "get_state"})
    );
    let read: TownCall =
        serde_json::from_value(serde_json::json!({"op": "read_events", "args": {}}))
            .expect("defaults");
    assert_eq!(
        read,
        TownCall::ReadEvents {
            after: 0,
            limit: u64::from(limits::DEFAULT_READ_LIMIT)
        }
    );
    let put: TownCall = serde_json::from_value(serde_json::json!({
        "op": "put_registry",
        "args": {"container_id": "c", "agents": [{"agent_id": "a", "rig_id": "r", "role": "mayor"}]}
    }))
    .expect("optional session and port");
    assert!(matches!(put, TownCall::PutRegistry { ref agents, .. } if agents[0].port.is_none()));

    assert_eq!(
        json(&MayorAction::Deliver {
            session_id: "s".into(),
            container_id: "c".into()
        }),
        serde_json::json!({"action": "deliver", "session_id": "s", "container_id": "c"})
    );
    assert_eq!(
        json(&MayorAction::Deferred),
        serde_json::json!({"action": "deferred"})
    );

    let mut town = town_with_agents();
    let beat = json(&town.heartbeat("container-a"));
    assert_eq!(
        beat,
        serde_json::json!({
            "draining": false,
            "cleared_drain": false,
            "registry": {"container_id": null, "agents": [], "updated_at": null},
            "released": [],
        })
    );
    assert_eq!(
        json(&town.evict("container-a")),
        serde_json::json!({"draining": true, "evicting_container_id": "container-a", "already_draining": false})
    );
    assert_eq!(
        json(&town.state()),
        serde_json::json!({
            "draining": true,
            "evicting_container_id": "container-a",
            "current_container_id": "container-a",
            "last_heartbeat_at": town.now_ms - 2,
            "mayor": {"rig_id": "hq", "agent_id": "mayor"},
        })
    );
    let event = town.events().remove(0);
    let shown = json(&event);
    assert_eq!(shown["type"], "container_ready");
    assert_eq!(shown["data"]["container_id"], "container-a");
    assert!(shown["created_at"].is_i64());

    for call in [
        TownCall::GetState,
        TownCall::MayorMessage {
            message_seq: 9,
            liveness_timeout_ms: 60_000,
        },
        TownCall::Evict {
            container_id: Some("c".into()),
            reason: Some("r".into()),
        },
        TownCall::Standing {
            container_id: "c".into(),
        },
        TownCall::RedeemBootstrap {
            token_id: "j".into(),
            container_id: "c".into(),
            expires_at_ms: 9,
        },
    ] {
        let text = serde_json::to_string(&call).expect("serializes");
        assert_eq!(
            serde_json::from_str::<TownCall>(&text).expect("parses"),
            call
        );
    }
    let reply = town.call(TownCall::Heartbeat {
        container_id: "container-a".into(),
        idempotency_key: None,
    });
    assert!(matches!(&reply, Ok(TownReply::Heartbeat(beat)) if beat.evicted));
    assert_eq!(
        json(&reply.clone().expect("heartbeat"))["args"]["evicted"],
        true
    );
    let reply = reply.expect("heartbeat");
    let text = serde_json::to_string(&reply).expect("serializes");
    assert_eq!(
        serde_json::from_str::<TownReply>(&text).expect("parses"),
        reply
    );
}

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).expect("serializes")
}
