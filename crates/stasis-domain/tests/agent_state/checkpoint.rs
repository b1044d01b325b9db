//! The checkpoint: stored, read, deleted, and refused when bad.

use crate::support::{NOW, code, ok, run, store};
use stasis_domain::DomainError;
use stasis_domain::agent_state::*;

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
