//! Sessions: records, listing, and deleting a session with its events.

use crate::support::{
    NOW, append, append_to, code, env, export, ok, put_session, run, seqs, seqs_from, store,
};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;
use stasis_domain::event_log::{self, ReadQuery};

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
