//! The workspace steps the agent object answers: each call and the reply
//! it reads. The saga runs them through its object port
//! ([`super::ports::WorkspaceObject`]); a runtime carries them in an agent
//! call ([`crate::operation::agent::workspace`]).

use super::{CommitArgs, Committed, WorkspaceCall, WorkspaceReply, WorkspaceVersion};
use crate::typed_operation::{Operation, operations};

/// A workspace step that reads as an `R`.
pub type WorkspaceOperation<R> = Operation<WorkspaceCall, WorkspaceReply, R>;

use WorkspaceCall as C;
use WorkspaceReply as R;

operations! {
    WorkspaceOperation<WorkspaceCall, WorkspaceReply>;
    /// The current version.
    current() -> Option<WorkspaceVersion>
        = C::Current, R::Current(current) => current;
    /// Makes a checked manifest the current version.
    commit(args: CommitArgs) -> Committed
        = C::Commit(Box::new(args)), R::Committed(committed) => committed;
    /// Drops the current version.
    remove(grace_ms: i64) -> ()
        = C::Remove { grace_ms }, R::Done => ();
}
