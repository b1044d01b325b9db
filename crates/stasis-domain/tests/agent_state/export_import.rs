//! Export and import: the manifest holds everything, and import replaces.

use crate::support::{
    NOW, append, code, empty_export, env, export, import, ok, populated, put_memory, run, seqs,
    seqs_from, store,
};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, ReadQuery};

#[test]
fn export_holds_everything_the_agent_has() {
    let manifest = export(&populated());
    assert_eq!(
        manifest.agent,
        Some(ManifestAgent {
            role: "mayor".into(),
            metadata: r#"{"town":"t"}"#.into()
        })
    );
    let sessions: Vec<_> = manifest
        .sessions
        .iter()
        .map(|s| (s.session_id.as_str(), s.status.as_str(), s.event_count))
        .collect();
    assert_eq!(
        sessions,
        vec![
            ("idle", "running", 0),
            ("s1", "completed", 3),
            ("s2", "running", 2)
        ]
    );
    assert_eq!(
        manifest.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=7).collect::<Vec<_>>()
    );
    assert_eq!(manifest.checkpoint.as_deref(), Some(r#"{"step":4}"#));
    assert_eq!(manifest.memory.len(), 2);
    assert_eq!(manifest.snapshot, None);
}

#[test]
fn export_then_import_into_a_fresh_agent_round_trips() {
    let original = export(&populated());
    let fresh = store();
    let summary = import_manifest(&fresh, &original, &env(NOW + 99)).expect("import");
    assert_eq!(
        summary,
        ImportSummary {
            events: 7,
            sessions: 3,
            memory: 2,
            checkpoint: true,
            snapshot: false
        }
    );
    assert_eq!(export(&fresh), original);
    let state = event_log::state(&fresh).expect("state");
    assert_eq!(
        (state.first_seq, state.last_seq, state.event_count),
        (1, 7, 7)
    );
    append(&fresh, Some("s2"), 1);
    assert_eq!(seqs(&fresh, Some("s2")), vec![6, 7, 8]);
}

#[test]
fn import_replaces_and_never_merges() {
    let store = populated();
    ok(&store, put_memory("only.here", "true"));
    let manifest = Manifest {
        memory: vec![ManifestMemory {
            key: "c".into(),
            value: "\"new\"".into(),
            updated_at: Some(5),
        }],
        ..Manifest::default()
    };
    import(&store, manifest).expect("import");
    let after = export(&store);
    assert_eq!(
        after,
        Manifest {
            memory: vec![ManifestMemory {
                key: "c".into(),
                value: "\"new\"".into(),
                updated_at: Some(5),
            }],
            ..empty_export()
        }
    );
    assert_eq!(code(run(&store, StateCall::GetAgent)), "agent_not_found");
}

#[test]
fn an_empty_manifest_resets_the_agent() {
    let store = populated();
    let manifest: Manifest = serde_json::from_str("{}").expect("{} is a manifest");
    let summary = import(&store, manifest).expect("import");
    assert_eq!(
        summary,
        ImportSummary {
            events: 0,
            sessions: 0,
            memory: 0,
            checkpoint: false,
            snapshot: false
        }
    );
    assert_eq!(export(&store), empty_export());
    assert_eq!(event_log::state(&store).expect("state"), Default::default());
    append(&store, None, 1);
    assert_eq!(seqs(&store, None), vec![1]);
}

#[test]
fn import_derives_sessions_only_events_name_and_keeps_seqs() {
    let store = store();
    let manifest: Manifest = serde_json::from_str(
        r#"{
            "events": [
                {"seq": 5, "type": "t", "session_id": "x", "data": "{}", "created_at": 10},
                {"seq": 9, "type": "t", "data": "1", "created_at": 11},
                {"seq": 12, "type": "t", "session_id": "x", "created_at": 12}
            ],
            "sessions": [{"session_id": "y", "status": "closed"}]
        }"#,
    )
    .expect("parses");
    let summary = import_manifest(&store, &manifest, &env(NOW)).expect("import");
    assert_eq!((summary.events, summary.sessions), (3, 2));
    let StateReply::Session(x) = ok(
        &store,
        StateCall::GetSession {
            session_id: "x".into(),
        },
    ) else {
        panic!("not a session");
    };
    assert_eq!(
        x,
        SessionRecord {
            session_id: "x".into(),
            status: "running".into(),
            metadata: "null".into(),
            first_seq: 5,
            last_seq: 12,
            event_count: 2,
            created_at: 10,
            updated_at: 12,
        }
    );
    let StateReply::Session(y) = ok(
        &store,
        StateCall::GetSession {
            session_id: "y".into(),
        },
    ) else {
        panic!("not a session");
    };
    assert_eq!(
        (y.status.as_str(), y.created_at, y.event_count),
        ("closed", NOW, 0)
    );
    assert_eq!(
        event_log::read(&store, &ReadQuery::after(3)).expect_err("before the horizon"),
        DomainError::CursorExpired { first_seq: 5 }
    );
    assert_eq!(seqs_from(&store, 4), vec![5, 9, 12]);
    append(&store, None, 1);
    assert_eq!(seqs_from(&store, 4), vec![5, 9, 12, 13]);
}

#[test]
fn a_whole_manifest_import_keeps_its_snapshot_inline() {
    let store = store();
    let snapshot = ManifestSnapshot {
        sha256: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9".into(),
        size: 11,
        event_watermark: 0,
        data_base64: "aGVsbG8gd29ybGQ=".into(),
    };
    let summary = import(
        &store,
        Manifest {
            snapshot: Some(snapshot.clone()),
            ..Manifest::default()
        },
    )
    .expect("import");
    assert!(summary.snapshot);
    let meta = stasis_domain::snapshot::current_meta(&store)
        .expect("reads")
        .expect("a snapshot");
    assert_eq!((meta.sha256, meta.size), (snapshot.sha256, 11));
    assert_eq!(
        export(&store).snapshot,
        None,
        "export leaves it to the runtime"
    );
}
