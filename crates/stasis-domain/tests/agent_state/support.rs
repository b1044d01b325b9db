//! Shared helpers: a fresh agent store, calls run at a fixed clock, log
//! appends and reads, and a populated agent.

use stasis_domain::agent::ObjectEnv;
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, AppendBatch, AppendSettings, NewEvent, ReadQuery};
use stasis_domain::{DomainError, limits};
use stasis_sqlite::SqliteStore;

pub(crate) const NOW: i64 = 1_700_000_000_000;

pub(crate) fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("in-memory sqlite opens");
    event_log::migrate(&store).expect("log schema applies");
    migrate(&store).expect("state schema applies");
    store
}

pub(crate) fn env(now_ms: i64) -> ObjectEnv {
    ObjectEnv {
        now_ms,
        max_events: limits::DEFAULT_MAX_EVENTS,
        retention: Default::default(),
    }
}

pub(crate) fn run(store: &SqliteStore, call: StateCall) -> Result<StateReply, DomainError> {
    execute(store, &call, &env(NOW))
}

pub(crate) fn ok(store: &SqliteStore, call: StateCall) -> StateReply {
    let text = format!("{call:?}");
    run(store, call).unwrap_or_else(|err| panic!("{text} failed: {err:?}"))
}

pub(crate) fn code(result: Result<StateReply, DomainError>) -> String {
    result.expect_err("refused").code().to_owned()
}

pub(crate) fn append_to(store: &SqliteStore, session: Option<&str>, n: usize, max_events: u64) {
    let events = (0..n)
        .map(|i| NewEvent::new("message.created", session, &format!(r#"{{"i":{i}}}"#)))
        .collect();
    let settings = AppendSettings {
        now_ms: NOW,
        max_events,
    };
    event_log::append(store, &AppendBatch::new(events), &settings).expect("append");
}

pub(crate) fn append(store: &SqliteStore, session: Option<&str>, n: usize) {
    append_to(store, session, n, limits::DEFAULT_MAX_EVENTS);
}

/// Every stored seq, read page by page from the start.
pub(crate) fn seqs(store: &SqliteStore, session: Option<&str>) -> Vec<u64> {
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

pub(crate) fn export(store: &SqliteStore) -> Manifest {
    read::export(store).expect("export")
}

pub(crate) fn import(
    store: &SqliteStore,
    manifest: Manifest,
) -> Result<ImportSummary, DomainError> {
    import_manifest(store, &manifest, &env(NOW))
}

pub(crate) fn put_agent(role: &str, metadata: Option<&str>) -> StateCall {
    StateCall::PutAgent {
        role: role.into(),
        metadata: metadata.map(str::to_owned),
    }
}

pub(crate) fn put_session(id: &str, status: Option<&str>, metadata: Option<&str>) -> StateCall {
    StateCall::PutSession {
        session_id: id.into(),
        status: status.map(str::to_owned),
        metadata: metadata.map(str::to_owned),
    }
}

pub(crate) fn put_memory(key: &str, value: &str) -> StateCall {
    StateCall::PutMemory {
        key: key.into(),
        value: value.into(),
    }
}

/// A populated agent: record, sessions with and without events, loose
/// events, a checkpoint and memory.
pub(crate) fn populated() -> SqliteStore {
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

pub(crate) fn seqs_from(store: &SqliteStore, after: u64) -> Vec<u64> {
    event_log::read(store, &ReadQuery::after(after))
        .expect("read")
        .events
        .iter()
        .map(|e| e.seq)
        .collect()
}

pub(crate) fn empty_export() -> Manifest {
    Manifest {
        format: Some(MANIFEST_FORMAT.into()),
        ..Manifest::default()
    }
}
