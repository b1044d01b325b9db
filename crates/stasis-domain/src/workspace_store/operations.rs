//! The workspace steps the agent object answers: each call and the reply
//! it reads. The saga runs them through its object port
//! ([`super::ports::WorkspaceObject`]); a runtime carries them in an agent
//! call ([`crate::operation::agent::workspace`]).

use super::{
    CommitArgs, Committed, WorkspaceCall, WorkspaceReply, WorkspaceVersion, staged::StagedHead,
};
use crate::typed_operation::{Operation, operations};
use crate::workspace::ContentHash;

/// A workspace step that reads as an `R`.
pub type WorkspaceOperation<R> = Operation<WorkspaceCall, WorkspaceReply, R>;

use WorkspaceCall as C;
use WorkspaceReply as R;

operations! {
    WorkspaceOperation<WorkspaceCall, WorkspaceReply>;
    /// The current version.
    current() -> Option<WorkspaceVersion>
        = C::Current, R::Current(current) => current;
    /// Version `version`: the current one or a kept one.
    version(version: u64) -> WorkspaceVersion
        = C::Version { version }, R::Version(version) => version;
    /// Makes a checked manifest the current version.
    commit(args: CommitArgs) -> Committed
        = C::Commit(Box::new(args)), R::Committed(committed) => committed;
    /// Drops the current version.
    remove(grace_ms: i64) -> ()
        = C::Remove { grace_ms }, R::Done => ();
    /// Records the head an import gave.
    stage_head(head: StagedHead) -> ()
        = C::StageHead(Box::new(head)), R::Done => ();
    /// The head the import in progress gave, if any.
    staged_head() -> Option<StagedHead>
        = C::StagedHead, R::Staged(head) => head;
    /// Stages the import's checked version.
    stage(args: CommitArgs) -> ()
        = C::Stage(Box::new(args)), R::Done => ();
    /// Part `part` of what the current version names, with sizes.
    export_part(part: u64) -> Option<Vec<(ContentHash, u64)>>
        = C::ExportPart { part, version: None }, R::Names(names) => names;
    /// Part `part` of what kept (or current) version `version` names.
    version_part(part: u64, version: u64) -> Option<Vec<(ContentHash, u64)>>
        = C::ExportPart { part, version: Some(version) }, R::Names(names) => names;
}
