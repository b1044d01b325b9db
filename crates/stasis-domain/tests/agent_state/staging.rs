//! Import in stages: staged rows stay invisible until the commit, a new
//! import (or a destroy) drops an earlier one, tickets go stale, parts come
//! in order, and the rules hold across batches.

use crate::support::{NOW, env, export, ok, populated, run, store};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;
use stasis_domain::snapshot::{self, SnapshotCall, SnapshotReply, StagedSnapshot};
use stasis_sqlite::SqliteStore;

fn step(store: &SqliteStore, call: ImportCall) -> Result<ImportReply, DomainError> {
    match run(store, StateCall::Import(call))? {
        StateReply::Import(reply) => Ok(reply),
        other => panic!("unexpected {other:?}"),
    }
}

fn begin(store: &SqliteStore, import_id: Option<&str>) -> u64 {
    let reply = step(
        store,
        ImportCall::Begin {
            import_id: import_id.map(str::to_owned),
        },
    );
    match reply {
        Ok(ImportReply::Ticket(ticket)) => ticket,
        other => panic!("begin: {other:?}"),
    }
}

fn stage(store: &SqliteStore, ticket: u64, batch: ImportBatch) -> Result<ImportReply, DomainError> {
    step(store, ImportCall::Stage { ticket, batch })
}

fn event(seq: u64, session: Option<&str>) -> ManifestEvent {
    ManifestEvent {
        seq,
        event_type: "t".into(),
        session_id: session.map(str::to_owned),
        data: format!(r#"{{"seq":{seq}}}"#),
        created_at: Some(seq as i64),
    }
}

fn events(seqs: &[u64]) -> ImportBatch {
    ImportBatch::Events(seqs.iter().map(|&s| event(s, Some("s"))).collect())
}

fn staged_rows(store: &SqliteStore, table: &str) -> i64 {
    use stasis_domain::sql::{RowExt, SqlStore};
    store
        .first_row(&format!("SELECT COUNT(*) FROM {table}"), Vec::new())
        .expect("counts")
        .expect("a row")
        .int(0)
        .expect("an integer")
}

fn refusal(result: Result<ImportReply, DomainError>) -> (String, String) {
    let err = result.expect_err("refused");
    (err.code().to_owned(), err.to_string())
}

#[test]
fn staged_rows_stay_invisible_until_the_commit() {
    let store = populated();
    let before = export(&store);
    let ticket = begin(&store, None);
    stage(&store, ticket, events(&[1, 2])).expect("stages");
    stage(&store, ticket, ImportBatch::Checkpoint(None)).expect("stages");
    step(&store, ImportCall::Check { ticket }).expect("checks");
    assert_eq!(export(&store), before, "staging changed what readers see");
    let summary = step(&store, ImportCall::Commit { ticket }).expect("commits");
    assert!(matches!(
        summary,
        ImportReply::Committed(ImportSummary {
            events: 2,
            sessions: 1,
            checkpoint: false,
            ..
        })
    ));
    let after = export(&store);
    assert_eq!(after.events, vec![event(1, Some("s")), event(2, Some("s"))]);
    assert_eq!(after.agent, None, "an import that gives no agent has none");
    for table in ["import_events", "import_sessions", "import_memory"] {
        assert_eq!(staged_rows(&store, table), 0, "{table} is left empty");
    }
}

#[test]
fn a_new_import_drops_the_staged_one_and_stales_its_ticket() {
    let store = store();
    let first = begin(&store, None);
    stage(&store, first, events(&[1, 2, 3])).expect("stages");
    let second = begin(&store, None);
    assert!(second > first);
    assert_eq!(staged_rows(&store, "import_events"), 0);
    let (code, _) = refusal(stage(&store, first, events(&[4])));
    assert_eq!(code, "import_superseded");
    let (code, _) = refusal(step(&store, ImportCall::Commit { ticket: first }));
    assert_eq!(code, "import_superseded");
    step(&store, ImportCall::Abort { ticket: first }).expect("a stale abort is harmless");
    stage(&store, second, events(&[7])).expect("the new import goes on");
    step(&store, ImportCall::Commit { ticket: second }).expect("commits");
    assert_eq!(export(&store).events, vec![event(7, Some("s"))]);
}

#[test]
fn an_abort_drops_what_was_staged() {
    let store = populated();
    let before = export(&store);
    let ticket = begin(&store, None);
    stage(&store, ticket, events(&[1])).expect("stages");
    step(&store, ImportCall::Abort { ticket }).expect("aborts");
    assert_eq!(staged_rows(&store, "import_events"), 0);
    let (code, _) = refusal(step(&store, ImportCall::Commit { ticket }));
    assert_eq!(code, "import_superseded");
    assert_eq!(export(&store), before);
}

#[test]
fn a_destroy_drops_an_import_in_progress() {
    let store = store();
    let ticket = begin(&store, None);
    stage(&store, ticket, events(&[1])).expect("stages");
    ok(&store, StateCall::DestroyAgent);
    let (code, _) = refusal(step(&store, ImportCall::Commit { ticket }));
    assert_eq!(code, "import_superseded");
    assert_eq!(staged_rows(&store, "import_events"), 0);
}

#[test]
fn rules_hold_across_batches_naming_the_item_in_the_whole_manifest() {
    let store = store();
    let ticket = begin(&store, None);
    stage(&store, ticket, events(&[1, 2])).expect("stages");
    let (code, message) = refusal(stage(&store, ticket, events(&[3, 2])));
    assert_eq!(code, "invalid_manifest");
    assert_eq!(
        message,
        "events[3].seq: must be above the previous event's seq 3"
    );

    let ticket = begin(&store, None);
    let session = |id: &str| ManifestSession {
        session_id: id.into(),
        status: "running".into(),
        metadata: "null".into(),
        first_seq: 0,
        last_seq: 0,
        event_count: 0,
        created_at: None,
        updated_at: None,
    };
    stage(&store, ticket, ImportBatch::Sessions(vec![session("a")])).expect("stages");
    let (_, message) = refusal(stage(
        &store,
        ticket,
        ImportBatch::Sessions(vec![session("b"), session("a")]),
    ));
    assert_eq!(message, "sessions[2].session_id: appears twice");

    let ticket = begin(&store, None);
    stage(&store, ticket, ImportBatch::Agent(None)).expect("stages");
    let agent = ManifestAgent {
        role: "mayor".into(),
        metadata: "null".into(),
    };
    let (_, message) = refusal(stage(&store, ticket, ImportBatch::Agent(Some(agent))));
    assert_eq!(message, "agent: appears twice");
    stage(&store, ticket, ImportBatch::Snapshot(None)).expect("stages");
    let (_, message) = refusal(stage(&store, ticket, ImportBatch::Snapshot(None)));
    assert_eq!(message, "snapshot: appears twice");
}

#[test]
fn retention_counts_every_batch() {
    let store = store();
    let small = stasis_domain::agent::ObjectEnv {
        now_ms: NOW,
        max_events: 3,
        retention: Default::default(),
    };
    let call = |call: ImportCall| {
        execute(&store, &StateCall::Import(call), &small).map(|reply| match reply {
            StateReply::Import(reply) => reply,
            other => panic!("unexpected {other:?}"),
        })
    };
    let Ok(ImportReply::Ticket(ticket)) = call(ImportCall::Begin { import_id: None }) else {
        panic!("begins");
    };
    call(ImportCall::Stage {
        ticket,
        batch: events(&[1, 2]),
    })
    .expect("two fit");
    let (code, message) = refusal(call(ImportCall::Stage {
        ticket,
        batch: events(&[3, 4]),
    }));
    assert_eq!(code, "invalid_manifest");
    assert!(
        message.starts_with("events: holds more than 3"),
        "{message}"
    );
}

#[test]
fn parts_come_in_order_under_their_import_id() {
    let store = store();
    let ticket = begin(&store, Some("move-1"));
    stage(&store, ticket, events(&[1])).expect("stages");
    let (code, _) = refusal(step(
        &store,
        ImportCall::Resume {
            import_id: "move-1".into(),
            part: 2,
        },
    ));
    assert_eq!(code, "import_part_out_of_order", "part 1 has not ended");
    step(&store, ImportCall::EndPart { ticket }).expect("part 1 ends");
    let (code, _) = refusal(step(
        &store,
        ImportCall::Resume {
            import_id: "move-2".into(),
            part: 2,
        },
    ));
    assert_eq!(code, "import_not_found");
    let resumed = step(
        &store,
        ImportCall::Resume {
            import_id: "move-1".into(),
            part: 2,
        },
    )
    .expect("part 2 follows");
    assert_eq!(resumed, ImportReply::Ticket(ticket));
    stage(&store, ticket, events(&[2])).expect("stages");
    step(&store, ImportCall::Commit { ticket }).expect("commits");
    assert_eq!(export(&store).events.len(), 2);
    let (code, _) = refusal(step(
        &store,
        ImportCall::Resume {
            import_id: "move-1".into(),
            part: 3,
        },
    ));
    assert_eq!(code, "import_not_found", "a committed import is over");
}

/// A KV-sized snapshot reserved the way the runtimes' saga does.
fn reserved_kv_snapshot(store: &SqliteStore) -> StagedSnapshot {
    let reserve = SnapshotCall::Reserve {
        size: 5_000_000,
        precondition: None,
        inline_limit: 1_000,
        key_prefix: "t/r/a/".into(),
        limit: snapshot::DEFAULT_SNAPSHOT_LIMIT,
    };
    let Ok(SnapshotReply::Reserved(reserved)) = snapshot::execute(store, &reserve, &env(NOW))
    else {
        panic!("reserves");
    };
    StagedSnapshot {
        version: reserved.version,
        sha256: "a".repeat(64),
        size: 5_000_000,
        event_watermark: 3,
        kv_key: reserved.kv_key,
        inline: None,
        chunk_size: None,
    }
}

fn keys_in_use(store: &SqliteStore) -> Vec<String> {
    match snapshot::execute(store, &SnapshotCall::KeysInUse, &env(NOW + 3_600_000)) {
        Ok(SnapshotReply::Keys(keys)) => keys,
        other => panic!("keys: {other:?}"),
    }
}

#[test]
fn a_staged_snapshot_key_outlives_reservations_and_goes_with_the_import() {
    let store = store();
    let ticket = begin(&store, None);
    let staged = reserved_kv_snapshot(&store);
    let key = staged.kv_key.clone().expect("a KV key");
    stage(&store, ticket, ImportBatch::Snapshot(Some(staged))).expect("stages");
    assert_eq!(
        keys_in_use(&store),
        vec![key.clone()],
        "an hour later, the staged key is still kept from sweeps"
    );
    step(&store, ImportCall::Abort { ticket }).expect("aborts");
    assert_eq!(
        keys_in_use(&store),
        Vec::<String>::new(),
        "a sweep may take it"
    );
}

#[test]
fn the_commit_switches_to_the_staged_snapshot() {
    let store = store();
    let ticket = begin(&store, None);
    let staged = reserved_kv_snapshot(&store);
    let key = staged.kv_key.clone();
    stage(&store, ticket, ImportBatch::Snapshot(Some(staged))).expect("stages");
    let reply = step(&store, ImportCall::Commit { ticket }).expect("commits");
    assert!(matches!(
        reply,
        ImportReply::Committed(ImportSummary { snapshot: true, .. })
    ));
    let meta = snapshot::current_meta(&store)
        .expect("reads")
        .expect("a snapshot");
    assert_eq!((meta.size, meta.event_watermark), (5_000_000, 3));
    assert_eq!(keys_in_use(&store), key.into_iter().collect::<Vec<_>>());
}
