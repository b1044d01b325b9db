//! Round trip over random states: export then import gives the same manifest.

use crate::support::{NOW, export, put_agent, put_memory, put_session, store};
use proptest::prelude::*;
use stasis_domain::agent::ObjectEnv;
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, AppendBatch, AppendSettings, NewEvent};
use stasis_sqlite::SqliteStore;

/// One step of a random history.
#[derive(Debug, Clone)]
enum Step {
    Append { session: Option<u8>, n: usize },
    PutSession { session: u8, status: u8 },
    DeleteSession { session: u8 },
    PutMemory { key: u8, value: u16 },
    DeleteMemory { key: u8 },
    Checkpoint { value: Option<u16> },
    Agent { role: Option<u8> },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (proptest::option::of(0u8..4), 1usize..6)
            .prop_map(|(session, n)| Step::Append { session, n }),
        1 => (0u8..5, 0u8..4).prop_map(|(session, status)| Step::PutSession { session, status }),
        1 => (0u8..5).prop_map(|session| Step::DeleteSession { session }),
        2 => (0u8..6, any::<u16>()).prop_map(|(key, value)| Step::PutMemory { key, value }),
        1 => (0u8..6).prop_map(|key| Step::DeleteMemory { key }),
        1 => proptest::option::of(any::<u16>()).prop_map(|value| Step::Checkpoint { value }),
        1 => proptest::option::of(0u8..3).prop_map(|role| Step::Agent { role }),
    ]
}

fn apply(store: &SqliteStore, step: &Step, now: i64, max_events: u64) {
    let env = ObjectEnv {
        now_ms: now,
        max_events,
        retention: Default::default(),
    };
    let call = match step {
        Step::Append { session, n } => {
            let session = session.map(|s| format!("s{s}"));
            let events = (0..*n)
                .map(|i| NewEvent::new("t", session.as_deref(), &format!("[{now},{i}]")))
                .collect();
            let settings = AppendSettings {
                now_ms: now,
                max_events,
            };
            event_log::append(store, &AppendBatch::new(events), &settings).expect("append");
            return;
        }
        Step::PutSession { session, status } => put_session(
            &format!("s{session}"),
            Some(SESSION_STATUSES[usize::from(*status) % 4]),
            Some(&format!("{{\"at\":{now}}}")),
        ),
        Step::DeleteSession { session } => StateCall::DeleteSession {
            session_id: format!("s{session}"),
        },
        Step::PutMemory { key, value } => put_memory(&format!("k{key}"), &value.to_string()),
        Step::DeleteMemory { key } => StateCall::DeleteMemory {
            key: format!("k{key}"),
        },
        Step::Checkpoint { value: Some(v) } => StateCall::PutCheckpoint {
            document: format!("{{\"v\":{v}}}"),
        },
        Step::Checkpoint { value: None } => StateCall::DeleteCheckpoint,
        Step::Agent { role: Some(r) } => put_agent(&format!("role{r}"), Some(&now.to_string())),
        Step::Agent { role: None } => StateCall::DestroyAgent,
    };
    // Deleting what is absent is refused; that is part of a random history.
    let _ = execute(store, &call, &env);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever the history (retention, deleted sessions, destroys):
    /// importing an export into a fresh agent, or back into the same one,
    /// exports the same manifest, and the log continues after the imported
    /// seqs.
    #[test]
    fn export_and_import_round_trip_over_random_histories(
        steps in proptest::collection::vec(step(), 0..40),
        max_events in 1u64..30,
    ) {
        let store = store();
        for (i, step) in steps.iter().enumerate() {
            apply(&store, step, NOW + i as i64, max_events);
        }
        let original = export(&store);
        let env = ObjectEnv { now_ms: NOW + 1_000, max_events, retention: Default::default() };

        let fresh = self::store();
        import_manifest(&fresh, &original, &env).expect("import fresh");
        prop_assert_eq!(&export(&fresh), &original);

        import_manifest(&store, &original, &env).expect("import over");
        prop_assert_eq!(&export(&store), &original);

        let state = event_log::state(&fresh).expect("state");
        prop_assert_eq!(state.event_count, original.events.len() as u64);
        prop_assert_eq!(state.last_seq, original.events.last().map_or(0, |e| e.seq));
        let json = serde_json::to_string(&original).expect("serializes");
        prop_assert_eq!(serde_json::from_str::<Manifest>(&json).expect("parses"), original);
    }
}
