//! Manifests that break a rule are refused, naming the field, and change nothing.

use crate::support::{NOW, export, import, populated};
use stasis_domain::agent::ObjectEnv;
use stasis_domain::agent_state::*;
use stasis_domain::limits;

/// Manifests that break one rule each, with the field the refusal names.
fn malformed() -> Vec<(&'static str, Manifest)> {
    let event = |seq: u64, data: &str| ManifestEvent {
        seq,
        event_type: "t".into(),
        session_id: None,
        data: data.into(),
        created_at: Some(1),
    };
    let base = Manifest::default;
    let oversized = format!("\"{}\"", "x".repeat(limits::MAX_EVENT_BYTES as usize));
    let snapshot = ManifestSnapshot {
        sha256: "0".repeat(64),
        size: 2,
        event_watermark: 0,
        data_base64: "AA==".into(),
    };
    vec![
        (
            "format",
            Manifest {
                format: Some("stasis.agent.v2".into()),
                ..base()
            },
        ),
        (
            "events[1].seq",
            Manifest {
                events: vec![event(2, "1"), event(2, "1")],
                ..base()
            },
        ),
        (
            "events[1].seq",
            Manifest {
                events: vec![event(3, "1"), event(1, "1")],
                ..base()
            },
        ),
        (
            "events[0].seq",
            Manifest {
                events: vec![event(0, "1")],
                ..base()
            },
        ),
        (
            "events[0].seq",
            Manifest {
                events: vec![event(u64::MAX, "1")],
                ..base()
            },
        ),
        (
            "events[1].data",
            Manifest {
                events: vec![event(1, "1"), event(2, "{oops")],
                ..base()
            },
        ),
        (
            "events[0].data",
            Manifest {
                events: vec![event(1, &oversized)],
                ..base()
            },
        ),
        (
            "events[0].type",
            Manifest {
                events: vec![ManifestEvent {
                    event_type: String::new(),
                    ..event(1, "1")
                }],
                ..base()
            },
        ),
        (
            "events[0].session_id",
            Manifest {
                events: vec![ManifestEvent {
                    session_id: Some("a/b".into()),
                    ..event(1, "1")
                }],
                ..base()
            },
        ),
        (
            "agent.role",
            Manifest {
                agent: Some(ManifestAgent {
                    role: String::new(),
                    metadata: "null".into(),
                }),
                ..base()
            },
        ),
        (
            "agent.metadata",
            Manifest {
                agent: Some(ManifestAgent {
                    role: "mayor".into(),
                    metadata: "nul".into(),
                }),
                ..base()
            },
        ),
        (
            "sessions[0].status",
            Manifest {
                sessions: vec![session("s", "paused")],
                ..base()
            },
        ),
        (
            "sessions[1].session_id",
            Manifest {
                sessions: vec![session("s", "running"), session("s", "closed")],
                ..base()
            },
        ),
        (
            "checkpoint",
            Manifest {
                checkpoint: Some("[1,".into()),
                ..base()
            },
        ),
        (
            "memory[0].key",
            Manifest {
                memory: vec![memory("..", "1")],
                ..base()
            },
        ),
        (
            "memory[1].key",
            Manifest {
                memory: vec![memory("k", "1"), memory("k", "2")],
                ..base()
            },
        ),
        (
            "memory[0].value",
            Manifest {
                memory: vec![memory("k", "")],
                ..base()
            },
        ),
        (
            "snapshot.sha256",
            Manifest {
                snapshot: Some(ManifestSnapshot {
                    sha256: "ABC".into(),
                    ..snapshot.clone()
                }),
                ..base()
            },
        ),
        (
            "snapshot.data_base64",
            Manifest {
                snapshot: Some(snapshot),
                ..base()
            },
        ),
    ]
}

fn session(id: &str, status: &str) -> ManifestSession {
    ManifestSession {
        session_id: id.into(),
        status: status.into(),
        metadata: "null".into(),
        first_seq: 0,
        last_seq: 0,
        event_count: 0,
        created_at: None,
        updated_at: None,
    }
}

fn memory(key: &str, value: &str) -> ManifestMemory {
    ManifestMemory {
        key: key.into(),
        value: value.into(),
        updated_at: None,
    }
}

#[test]
fn malformed_manifests_are_refused_naming_the_field_and_change_nothing() {
    let store = populated();
    let before = export(&store);
    for (path, manifest) in malformed() {
        let err = import(&store, manifest).expect_err(path);
        assert_eq!(err.code(), "invalid_manifest", "{path}: {err:?}");
        assert!(
            err.to_string().starts_with(&format!("{path}: ")),
            "{path}: {err}"
        );
        assert_eq!(export(&store), before, "{path} changed the agent");
    }
}

#[test]
fn more_events_than_retention_keeps_are_refused() {
    let store = populated();
    let before = export(&store);
    let events = (1..=3)
        .map(|seq| ManifestEvent {
            seq,
            event_type: "t".into(),
            session_id: None,
            data: "1".into(),
            created_at: None,
        })
        .collect();
    let env = ObjectEnv {
        now_ms: NOW,
        max_events: 2,
        retention: Default::default(),
    };
    let manifest = Manifest {
        events,
        ..Manifest::default()
    };
    let err = import_manifest(&store, &manifest, &env).expect_err("refused");
    assert_eq!(err.code(), "invalid_manifest");
    assert_eq!(export(&store), before);
}

#[test]
fn unknown_manifest_fields_do_not_parse() {
    for text in [
        r#"{"evnets": []}"#,
        r#"{"memory": [{"key": "k", "value": "1", "extra": 1}]}"#,
    ] {
        assert!(serde_json::from_str::<Manifest>(text).is_err(), "{text}");
    }
}
