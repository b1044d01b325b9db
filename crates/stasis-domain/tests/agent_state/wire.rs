//! The wire: every call and reply survives JSON; reads are not writes.

use crate::support::{export, ok, populated, put_agent, put_memory, put_session};
use stasis_domain::agent_state::*;

fn round_trip<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_string(value).expect("serializes");
    let back: T = serde_json::from_str(&json).expect("deserializes");
    assert_eq!(&back, value, "{json}");
}

#[test]
fn every_call_and_reply_survives_json() {
    let store = populated();
    let manifest = export(&store);
    let calls = vec![
        put_agent("mayor", Some("{}")),
        StateCall::GetAgent,
        put_session("s1", Some("closed"), None),
        StateCall::GetSession {
            session_id: "s1".into(),
        },
        StateCall::ListSessions,
        StateCall::PutCheckpoint {
            document: "[]".into(),
        },
        StateCall::GetCheckpoint,
        StateCall::DeleteCheckpoint,
        put_memory("k", "\"v\""),
        StateCall::GetMemory { key: "k".into() },
        StateCall::ListMemory {
            prefix: Some("k".into()),
            query: None,
            limit: Some(3),
        },
        StateCall::DeleteMemory { key: "k".into() },
        StateCall::ExportHead,
        StateCall::ExportSessions { after: None },
        StateCall::ExportMemory {
            after: Some("a".into()),
        },
        StateCall::DeleteSession {
            session_id: "s1".into(),
        },
        StateCall::Import(ImportCall::Begin {
            import_id: Some("copy-1".into()),
        }),
        StateCall::Import(ImportCall::Resume {
            import_id: "copy-1".into(),
            part: 1,
        }),
        StateCall::Import(ImportCall::Stage {
            ticket: 1,
            batch: ImportBatch::Events(manifest.events.clone()),
        }),
        StateCall::Import(ImportCall::Stage {
            ticket: 1,
            batch: ImportBatch::Checkpoint(manifest.checkpoint.clone()),
        }),
        StateCall::Import(ImportCall::Stage {
            ticket: 1,
            batch: ImportBatch::Agent(manifest.agent.clone()),
        }),
        StateCall::Import(ImportCall::EndPart { ticket: 1 }),
        StateCall::Import(ImportCall::Check { ticket: 1 }),
        StateCall::Import(ImportCall::Commit { ticket: 1 }),
        StateCall::Import(ImportCall::Abort { ticket: 1 }),
        StateCall::DestroyAgent,
    ];
    for call in calls {
        round_trip(&call);
        let reply = ok(&store, call);
        round_trip(&reply);
    }
}

#[test]
fn reads_are_not_writes() {
    let reads = [
        StateCall::GetAgent,
        StateCall::ListSessions,
        StateCall::GetCheckpoint,
        StateCall::ExportHead,
        StateCall::ExportSessions { after: None },
        StateCall::ExportMemory { after: None },
    ];
    assert!(reads.iter().all(|c| !is_write(c)));
    let writes = [
        put_agent("r", None),
        StateCall::DestroyAgent,
        StateCall::DeleteCheckpoint,
        StateCall::Import(ImportCall::Begin { import_id: None }),
        put_memory("k", "1"),
    ];
    assert!(writes.iter().all(is_write));
}
