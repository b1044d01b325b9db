//! Memory: entries written, read, deleted, listed by prefix and searched.

use crate::support::{NOW, code, export, ok, put_memory, run, store};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;
use stasis_sqlite::SqliteStore;

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
