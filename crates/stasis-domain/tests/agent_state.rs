//! The agent's state beside its log (record, sessions, checkpoint, memory,
//! export / import), checked against real SQLite. Refusals are checked to
//! change nothing even without the runtime's rollback: every rule runs
//! before the first write.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use proptest::prelude::*;
use stasis_domain::agent::ObjectEnv;
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, AppendBatch, AppendSettings, NewEvent, ReadQuery};
use stasis_domain::{DomainError, limits};
use stasis_sqlite::SqliteStore;

const NOW: i64 = 1_700_000_000_000;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
    event_log::migrate(&store).expect("log schema applies");
    migrate(&store).expect("state schema applies");
    store
}

fn env(now_ms: i64) -> ObjectEnv {
    ObjectEnv {
        now_ms,
        max_events: limits::DEFAULT_MAX_EVENTS,
    }
}

fn run(store: &SqliteStore, call: StateCall) -> Result<StateReply, DomainError> {
    execute(store, &call, &env(NOW))
}

fn ok(store: &SqliteStore, call: StateCall) -> StateReply {
    let text = format!("{call:?}");
    run(store, call).unwrap_or_else(|err| panic!("{text} failed: {err:?}"))
}

fn code(result: Result<StateReply, DomainError>) -> String {
    result.expect_err("refused").code().to_owned()
}

fn append_to(store: &SqliteStore, session: Option<&str>, n: usize, max_events: u64) {
    let events = (0..n)
        .map(|i| NewEvent::new("message.created", session, &format!(r#"{{"i":{i}}}"#)))
        .collect();
    let settings = AppendSettings {
        now_ms: NOW,
        max_events,
    };
    event_log::append(store, &AppendBatch::new(events), &settings).expect("append");
}

fn append(store: &SqliteStore, session: Option<&str>, n: usize) {
    append_to(store, session, n, limits::DEFAULT_MAX_EVENTS);
}

/// Every stored seq, read page by page from the start.
fn seqs(store: &SqliteStore, session: Option<&str>) -> Vec<u64> {
    let mut query = ReadQuery::after(0);
    query.limit = 2;
    query.session_id = session.map(str::to_owned);
    let mut out = Vec::new();
    loop {
        let page = event_log::read(store, &query).expect("read");
        out.extend(page.events.iter().map(|e| e.seq));
        if !page.has_more {
            return out;
        }
        query.after = page.next_after;
    }
}

fn export(store: &SqliteStore) -> Manifest {
    match ok(store, StateCall::Export) {
        StateReply::Manifest(manifest) => manifest,
        other => panic!("unexpected {other:?}"),
    }
}

fn import(store: &SqliteStore, manifest: Manifest) -> Result<ImportOutcome, DomainError> {
    match run(store, StateCall::Import(manifest))? {
        StateReply::Imported(outcome) => Ok(outcome),
        other => panic!("unexpected {other:?}"),
    }
}

fn put_agent(role: &str, metadata: Option<&str>) -> StateCall {
    StateCall::PutAgent {
        role: role.into(),
        metadata: metadata.map(str::to_owned),
    }
}

fn put_session(id: &str, status: Option<&str>, metadata: Option<&str>) -> StateCall {
    StateCall::PutSession {
        session_id: id.into(),
        status: status.map(str::to_owned),
        metadata: metadata.map(str::to_owned),
    }
}

fn put_memory(key: &str, value: &str) -> StateCall {
    StateCall::PutMemory {
        key: key.into(),
        value: value.into(),
    }
}

fn memory_keys(
    store: &SqliteStore,
    prefix: Option<&str>,
    query: Option<&str>,
    limit: Option<u32>,
) -> Vec<String> {
    let call = StateCall::ListMemory {
        prefix: prefix.map(str::to_owned),
        query: query.map(str::to_owned),
        limit,
    };
    match ok(store, call) {
        StateReply::MemoryList(entries) => entries.into_iter().map(|e| e.key).collect(),
        other => panic!("unexpected {other:?}"),
    }
}

/// A populated agent: record, sessions with and without events, loose
/// events, a checkpoint and memory.
fn populated() -> SqliteStore {
    let store = store();
    ok(&store, put_agent("mayor", Some(r#"{"town":"t"}"#)));
    append(&store, Some("s1"), 3);
    append(&store, None, 2);
    append(&store, Some("s2"), 2);
    ok(
        &store,
        put_session("s1", Some("completed"), Some(r#"{"k":1}"#)),
    );
    ok(&store, put_session("idle", None, None));
    ok(
        &store,
        StateCall::PutCheckpoint {
            document: r#"{"step":4}"#.into(),
        },
    );
    ok(&store, put_memory("a.b", r#""Alpha""#));
    ok(&store, put_memory("c", "[1,2]"));
    store
}

// --- agent record ---------------------------------------------------------

#[test]
fn put_agent_registers_then_updates_keeping_creation_time_and_metadata() {
    let store = store();
    let StateReply::Agent(first) = ok(&store, put_agent("mayor", Some(r#"{"a":1}"#))) else {
        panic!("not an agent reply");
    };
    assert!(first.created);
    assert_eq!(
        (first.role.as_str(), first.metadata.as_str()),
        ("mayor", r#"{"a":1}"#)
    );
    let later = execute(&store, &put_agent("polecat", None), &env(NOW + 5)).expect("update");
    let StateReply::Agent(second) = later else {
        panic!("not an agent reply");
    };
    assert!(!second.created);
    assert_eq!(second.metadata, r#"{"a":1}"#, "omitted metadata is kept");
    assert_eq!((second.created_at, second.updated_at), (NOW, NOW + 5));
    assert_eq!(second.role, "polecat");
}

#[test]
fn a_new_agent_without_metadata_has_null_metadata() {
    let store = store();
    let StateReply::Agent(record) = ok(&store, put_agent("refinery", None)) else {
        panic!("not an agent reply");
    };
    assert_eq!(record.metadata, "null");
}

#[test]
fn bad_roles_and_metadata_are_refused_and_register_nothing() {
    let store = store();
    assert_eq!(code(run(&store, put_agent("", None))), "invalid_request");
    assert_eq!(
        code(run(
            &store,
            put_agent(&"r".repeat(MAX_ROLE_BYTES + 1), None)
        )),
        "invalid_request"
    );
    assert_eq!(
        code(run(&store, put_agent("mayor", Some("{nope")))),
        "invalid_request"
    );
    let huge = format!("\"{}\"", "x".repeat(MAX_DOCUMENT_BYTES as usize));
    let err = run(&store, put_agent("mayor", Some(&huge))).expect_err("too large");
    assert!(
        matches!(&err, DomainError::TooLarge { code, limit, .. }
            if code == "metadata_too_large" && *limit == MAX_DOCUMENT_BYTES),
        "{err:?}"
    );
    assert_eq!(code(run(&store, StateCall::GetAgent)), "agent_not_found");
    assert!(run(&store, put_agent(&"r".repeat(MAX_ROLE_BYTES), None)).is_ok());
}

#[test]
fn an_agent_with_events_but_no_registration_is_not_found() {
    let store = store();
    append(&store, None, 2);
    assert_eq!(code(run(&store, StateCall::GetAgent)), "agent_not_found");
}

#[test]
fn get_agent_reports_the_log_and_the_checkpoint() {
    let store = populated();
    let StateReply::AgentSummary(summary) = ok(&store, StateCall::GetAgent) else {
        panic!("not a summary");
    };
    assert_eq!(
        summary,
        AgentSummary {
            role: "mayor".into(),
            metadata: r#"{"town":"t"}"#.into(),
            created_at: NOW,
            updated_at: NOW,
            last_seq: 7,
            event_count: 7,
            has_checkpoint: true,
        }
    );
}

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

// --- sessions -------------------------------------------------------------

#[test]
fn put_session_creates_running_sessions_and_updates_only_given_fields() {
    let store = store();
    let StateReply::Session(created) = ok(&store, put_session("s", None, None)) else {
        panic!("not a session");
    };
    assert_eq!(
        created,
        SessionRecord {
            session_id: "s".into(),
            status: "running".into(),
            metadata: "null".into(),
            first_seq: 0,
            last_seq: 0,
            event_count: 0,
            created_at: NOW,
            updated_at: NOW,
        }
    );
    ok(&store, put_session("s", None, Some(r#"{"m":true}"#)));
    let updated = execute(
        &store,
        &put_session("s", Some("failed"), None),
        &env(NOW + 1),
    );
    let Ok(StateReply::Session(updated)) = updated else {
        panic!("not a session");
    };
    assert_eq!(
        (updated.status.as_str(), updated.metadata.as_str()),
        ("failed", r#"{"m":true}"#)
    );
    assert_eq!((updated.created_at, updated.updated_at), (NOW, NOW + 1));
}

#[test]
fn a_session_named_by_events_shows_their_seqs_and_keeps_them_on_update() {
    let store = store();
    append(&store, Some("s"), 3);
    ok(&store, put_session("s", Some("closed"), None));
    let StateReply::Session(session) = ok(
        &store,
        StateCall::GetSession {
            session_id: "s".into(),
        },
    ) else {
        panic!("not a session");
    };
    assert_eq!(
        (
            session.first_seq,
            session.last_seq,
            session.event_count,
            session.status.as_str()
        ),
        (1, 3, 3, "closed")
    );
    append(&store, Some("s"), 1);
    let listed = match ok(&store, StateCall::ListSessions) {
        StateReply::Sessions(list) => list,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(
        (listed[0].last_seq, listed[0].status.as_str()),
        (4, "closed")
    );
}

#[test]
fn bad_session_input_is_refused_and_changes_nothing() {
    let store = store();
    ok(&store, put_session("s", Some("running"), Some("1")));
    let before = export(&store);
    assert_eq!(
        code(run(&store, put_session("s", Some("paused"), None))),
        "invalid_request"
    );
    assert_eq!(
        code(run(&store, put_session("s", Some("closed"), Some("{")))),
        "invalid_request"
    );
    assert_eq!(
        code(run(&store, put_session("..", None, None))),
        "invalid_id"
    );
    assert_eq!(export(&store), before);
}

#[test]
fn unknown_sessions_are_not_found() {
    let store = store();
    let id = || "nope".to_owned();
    assert_eq!(
        code(run(&store, StateCall::GetSession { session_id: id() })),
        "session_not_found"
    );
    assert_eq!(
        code(run(&store, StateCall::DeleteSession { session_id: id() })),
        "session_not_found"
    );
}

#[test]
fn sessions_list_oldest_first_with_their_metadata() {
    let store = store();
    execute(&store, &put_session("b", None, Some("[1]")), &env(NOW)).expect("put");
    execute(&store, &put_session("a", None, None), &env(NOW + 1)).expect("put");
    let StateReply::Sessions(list) = ok(&store, StateCall::ListSessions) else {
        panic!("not sessions");
    };
    let seen: Vec<_> = list
        .iter()
        .map(|s| (s.session_id.as_str(), s.metadata.as_str()))
        .collect();
    assert_eq!(seen, vec![("b", "[1]"), ("a", "null")]);
}

#[test]
fn deleting_a_session_removes_exactly_its_events_and_keeps_cursors_working() {
    let store = store();
    append(&store, Some("a"), 2); // 1, 2
    append(&store, Some("b"), 2); // 3, 4
    append(&store, None, 1); // 5
    append(&store, Some("a"), 1); // 6
    let reply = ok(
        &store,
        StateCall::DeleteSession {
            session_id: "a".into(),
        },
    );
    assert_eq!(
        reply,
        StateReply::SessionDeleted(SessionDeleted {
            session_id: "a".into(),
            events_removed: 3
        })
    );
    assert_eq!(seqs(&store, None), vec![3, 4, 5]);
    assert_eq!(seqs(&store, Some("b")), vec![3, 4]);
    assert!(seqs(&store, Some("a")).is_empty());
    let state = event_log::state(&store).expect("state");
    assert_eq!(
        (state.first_seq, state.last_seq, state.event_count),
        (1, 6, 3)
    );
    // A cursor from before the deletion still reads; nothing expired.
    let page = event_log::read(&store, &ReadQuery::after(0)).expect("read");
    assert_eq!(page.events.len(), 3);
    // Seqs are never reused.
    append(&store, Some("a"), 1);
    assert_eq!(seqs(&store, None), vec![3, 4, 5, 7]);
    let StateReply::Session(again) = ok(
        &store,
        StateCall::GetSession {
            session_id: "a".into(),
        },
    ) else {
        panic!("not a session");
    };
    assert_eq!(
        (again.first_seq, again.last_seq, again.event_count),
        (7, 7, 1)
    );
}

#[test]
fn deleting_every_session_empties_the_log_without_resetting_seqs() {
    let store = store();
    append(&store, Some("a"), 3);
    ok(
        &store,
        StateCall::DeleteSession {
            session_id: "a".into(),
        },
    );
    let state = event_log::state(&store).expect("state");
    assert_eq!((state.last_seq, state.event_count), (3, 0));
    let page = event_log::read(&store, &ReadQuery::after(0)).expect("read");
    assert!(page.events.is_empty() && !page.has_more);
    append(&store, None, 1);
    assert_eq!(seqs(&store, None), vec![4]);
}

#[test]
fn retention_stays_exact_after_a_session_deletion() {
    let store = store();
    append_to(&store, Some("a"), 3, 5); // 1..3
    append_to(&store, Some("b"), 2, 5); // 4, 5
    ok(
        &store,
        StateCall::DeleteSession {
            session_id: "a".into(),
        },
    );
    append_to(&store, Some("b"), 4, 5); // 6..9; 6 stored, keep 5
    assert_eq!(seqs_from(&store, 4), vec![5, 6, 7, 8, 9]);
    let state = event_log::state(&store).expect("state");
    assert_eq!(
        (state.first_seq, state.last_seq, state.event_count),
        (5, 9, 5)
    );
    assert_eq!(
        event_log::read(&store, &ReadQuery::after(3)).expect_err("expired"),
        DomainError::CursorExpired { first_seq: 5 }
    );
}

fn seqs_from(store: &SqliteStore, after: u64) -> Vec<u64> {
    event_log::read(store, &ReadQuery::after(after))
        .expect("read")
        .events
        .iter()
        .map(|e| e.seq)
        .collect()
}

// --- checkpoint -----------------------------------------------------------

#[test]
fn a_checkpoint_is_stored_read_and_deleted() {
    let store = store();
    assert_eq!(
        code(run(&store, StateCall::GetCheckpoint)),
        "checkpoint_not_found"
    );
    assert_eq!(
        code(run(&store, StateCall::DeleteCheckpoint)),
        "checkpoint_not_found"
    );
    let document = r#"{ "plan": ["a", "b"] }"#;
    let stored = ok(
        &store,
        StateCall::PutCheckpoint {
            document: document.into(),
        },
    );
    assert_eq!(
        stored,
        StateReply::CheckpointStored(CheckpointStored {
            size: document.len() as u64,
            updated_at: NOW
        })
    );
    let StateReply::Checkpoint(read) = ok(&store, StateCall::GetCheckpoint) else {
        panic!("not a checkpoint");
    };
    assert_eq!(read.document, document, "stored exactly as given");
    assert_eq!(ok(&store, StateCall::DeleteCheckpoint), StateReply::Deleted);
    assert_eq!(
        code(run(&store, StateCall::GetCheckpoint)),
        "checkpoint_not_found"
    );
}

#[test]
fn an_oversized_or_malformed_checkpoint_is_refused_and_keeps_the_old_one() {
    let store = store();
    ok(
        &store,
        StateCall::PutCheckpoint {
            document: "1".into(),
        },
    );
    let at_limit = format!("\"{}\"", "x".repeat(MAX_DOCUMENT_BYTES as usize - 2));
    ok(
        &store,
        StateCall::PutCheckpoint {
            document: at_limit.clone(),
        },
    );
    let over = format!("{at_limit} ");
    let err = run(&store, StateCall::PutCheckpoint { document: over }).expect_err("too large");
    assert_eq!(
        err,
        DomainError::TooLarge {
            code: "checkpoint_too_large".into(),
            message: err.to_string(),
            limit: 1_048_576
        }
    );
    assert_eq!(
        code(run(
            &store,
            StateCall::PutCheckpoint {
                document: "{".into()
            }
        )),
        "invalid_request"
    );
    let StateReply::Checkpoint(kept) = ok(&store, StateCall::GetCheckpoint) else {
        panic!("not a checkpoint");
    };
    assert_eq!(kept.document, at_limit);
}

// --- memory ---------------------------------------------------------------

#[test]
fn memory_entries_are_written_read_and_deleted() {
    let store = store();
    let reply = ok(&store, put_memory("notes", r#"{"x":1}"#));
    let entry = MemoryEntry {
        key: "notes".into(),
        value: r#"{"x":1}"#.into(),
        updated_at: NOW,
    };
    assert_eq!(reply, StateReply::Memory(entry.clone()));
    let got = ok(
        &store,
        StateCall::GetMemory {
            key: "notes".into(),
        },
    );
    assert_eq!(got, StateReply::Memory(entry));
    let delete = || StateCall::DeleteMemory {
        key: "notes".into(),
    };
    assert_eq!(ok(&store, delete()), StateReply::Deleted);
    assert_eq!(code(run(&store, delete())), "memory_not_found");
    assert_eq!(
        code(run(
            &store,
            StateCall::GetMemory {
                key: "notes".into()
            }
        )),
        "memory_not_found"
    );
}

#[test]
fn bad_memory_writes_are_refused_and_change_nothing() {
    let store = store();
    ok(&store, put_memory("k", "1"));
    let before = export(&store);
    assert_eq!(code(run(&store, put_memory("a/b", "1"))), "invalid_id");
    assert_eq!(
        code(run(&store, put_memory("k", "nope"))),
        "invalid_request"
    );
    let huge = format!("\"{}\"", "x".repeat(MAX_DOCUMENT_BYTES as usize));
    let err = run(&store, put_memory("k", &huge)).expect_err("too large");
    assert!(
        matches!(&err, DomainError::TooLarge { code, limit, .. }
            if code == "memory_value_too_large" && *limit == 1_048_576),
        "{err:?}"
    );
    assert_eq!(export(&store), before);
}

#[test]
fn memory_lists_by_literal_prefix_sorted_by_key() {
    let store = store();
    for key in ["a_b", "a_c", "axb", "a_", "a", "b", "a.c"] {
        ok(&store, put_memory(key, "1"));
    }
    assert_eq!(
        memory_keys(&store, Some("a_"), None, None),
        vec!["a_", "a_b", "a_c"],
        "`_` is no wildcard"
    );
    assert!(
        memory_keys(&store, Some("a%"), None, None).is_empty(),
        "`%` is no id character"
    );
    assert_eq!(
        memory_keys(&store, None, None, None),
        vec!["a", "a.c", "a_", "a_b", "a_c", "axb", "b"]
    );
    assert_eq!(memory_keys(&store, Some("a."), None, None), vec!["a.c"]);
    assert_eq!(
        memory_keys(&store, Some(""), None, Some(2)),
        vec!["a", "a.c"]
    );
    assert!(memory_keys(&store, Some("zz"), None, None).is_empty());
}

#[test]
fn memory_search_ignores_case_and_combines_with_prefix() {
    let store = store();
    ok(&store, put_memory("p.1", r#"{"note":"Deploy the RIG"}"#));
    ok(&store, put_memory("p.2", r#""nothing here""#));
    ok(&store, put_memory("q.1", r#"["deploy"]"#));
    assert_eq!(
        memory_keys(&store, None, Some("DEPLOY"), None),
        vec!["p.1", "q.1"]
    );
    assert_eq!(
        memory_keys(&store, Some("p."), Some("deploy"), None),
        vec!["p.1"]
    );
    assert_eq!(
        memory_keys(&store, None, Some(r#""note""#), None),
        vec!["p.1"],
        "the JSON text is searched, quotes included"
    );
}

#[test]
fn memory_list_limits_are_checked_and_default_to_a_hundred() {
    let store = store();
    for i in 0..120 {
        ok(&store, put_memory(&format!("k{i:03}"), "1"));
    }
    assert_eq!(memory_keys(&store, None, None, None).len(), 100);
    assert_eq!(memory_keys(&store, None, None, Some(1000)).len(), 120);
    for limit in [0, 1001] {
        let call = StateCall::ListMemory {
            prefix: None,
            query: None,
            limit: Some(limit),
        };
        assert_eq!(code(run(&store, call)), "invalid_request");
    }
}

// --- export and import ----------------------------------------------------

fn empty_export() -> Manifest {
    Manifest {
        format: Some(MANIFEST_FORMAT.into()),
        ..Manifest::default()
    }
}

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
    let outcome =
        execute(&fresh, &StateCall::Import(original.clone()), &env(NOW + 99)).expect("import");
    assert_eq!(
        outcome,
        StateReply::Imported(ImportOutcome {
            summary: ImportSummary {
                events: 7,
                sessions: 3,
                memory: 2,
                checkpoint: true,
                snapshot: false
            },
            snapshot: None
        })
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
    let outcome = import(&store, manifest).expect("import");
    assert_eq!(
        outcome.summary,
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
    let outcome = execute(&store, &StateCall::Import(manifest), &env(NOW)).expect("import");
    let StateReply::Imported(outcome) = outcome else {
        panic!("not imported");
    };
    assert_eq!((outcome.summary.events, outcome.summary.sessions), (3, 2));
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
fn import_hands_back_the_snapshot_without_storing_it() {
    let store = store();
    let snapshot = ManifestSnapshot {
        sha256: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9".into(),
        size: 11,
        event_watermark: 0,
        data_base64: "aGVsbG8gd29ybGQ=".into(),
    };
    let outcome = import(
        &store,
        Manifest {
            snapshot: Some(snapshot.clone()),
            ..Manifest::default()
        },
    )
    .expect("import");
    assert!(outcome.summary.snapshot);
    assert_eq!(outcome.snapshot, Some(snapshot));
    assert_eq!(export(&store).snapshot, None);
}

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
    };
    let err = execute(
        &store,
        &StateCall::Import(Manifest {
            events,
            ..Manifest::default()
        }),
        &env,
    )
    .expect_err("refused");
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

// --- the wire -------------------------------------------------------------

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
        StateCall::Export,
        StateCall::DeleteSession {
            session_id: "s1".into(),
        },
        StateCall::Import(export(&store)),
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
        StateCall::Export,
    ];
    assert!(reads.iter().all(|c| !is_write(c)));
    let writes = [
        put_agent("r", None),
        StateCall::DestroyAgent,
        StateCall::DeleteCheckpoint,
        StateCall::Import(Manifest::default()),
        put_memory("k", "1"),
    ];
    assert!(writes.iter().all(is_write));
}

// --- round trip over random states ----------------------------------------

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
        let env = ObjectEnv { now_ms: NOW + 1_000, max_events };

        let fresh = self::store();
        execute(&fresh, &StateCall::Import(original.clone()), &env).expect("import fresh");
        prop_assert_eq!(&export(&fresh), &original);

        execute(&store, &StateCall::Import(original.clone()), &env).expect("import over");
        prop_assert_eq!(&export(&store), &original);

        let state = event_log::state(&fresh).expect("state");
        prop_assert_eq!(state.event_count, original.events.len() as u64);
        prop_assert_eq!(state.last_seq, original.events.last().map_or(0, |e| e.seq));
        let json = serde_json::to_string(&original).expect("serializes");
        prop_assert_eq!(serde_json::from_str::<Manifest>(&json).expect("parses"), original);
    }
}
