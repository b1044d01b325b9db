//! The agent record: registration, update, refusals and the summary.

use crate::support::{NOW, append, code, env, ok, populated, put_agent, run, store};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;

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
