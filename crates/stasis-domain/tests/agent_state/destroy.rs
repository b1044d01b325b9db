//! Destroying an agent: everything goes, seqs and producer stamps included.

use crate::support::{
    NOW, append, code, empty_export, export, ok, populated, put_memory, run, seqs, store,
};
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, AppendBatch, AppendSettings, NewEvent};
use stasis_sqlite::SqliteStore;

#[test]
fn destroy_removes_everything_and_seqs_restart_at_one() {
    let store = populated();
    let reply = ok(&store, StateCall::DestroyAgent);
    assert_eq!(
        reply,
        StateReply::Destroyed(DestroyOutcome {
            existed: true,
            registered: true
        })
    );
    assert_eq!(export(&store), empty_export());
    assert_eq!(event_log::state(&store).expect("state"), Default::default());
    assert_eq!(code(run(&store, StateCall::GetAgent)), "agent_not_found");
    append(&store, Some("s1"), 1);
    assert_eq!(seqs(&store, None), vec![1]);
}

#[test]
fn destroy_tells_apart_unknown_unregistered_and_registered_agents() {
    let store = store();
    let destroyed = |store: &SqliteStore| match ok(store, StateCall::DestroyAgent) {
        StateReply::Destroyed(outcome) => (outcome.existed, outcome.registered),
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(destroyed(&store), (false, false));
    ok(&store, put_memory("k", "1"));
    assert_eq!(destroyed(&store), (true, false));
    assert_eq!(destroyed(&store), (false, false));
}

#[test]
fn destroy_forgets_producer_stamps() {
    let store = store();
    let batch = AppendBatch {
        events: vec![NewEvent::new("t", None, "1")],
        producer: Some(event_log::ProducerStamp {
            producer_id: "p".into(),
            producer_seq: 0,
        }),
    };
    let settings = AppendSettings::new(NOW);
    event_log::append(&store, &batch, &settings).expect("append");
    event_log::append(&store, &batch, &settings).expect("retry");
    ok(&store, StateCall::DestroyAgent);
    let again = event_log::append(&store, &batch, &settings).expect("append");
    assert!(!again.duplicate, "a destroyed agent remembers no stamps");
    assert_eq!(seqs(&store, None), vec![1]);
}
