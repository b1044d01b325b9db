//! The calls the agent object answers for its workspace, as data (the edge
//! sends them to the agent's Durable Object as JSON). The chunks' own
//! steps (missing, upload, collection) are the chunk store's calls, which
//! travel as snapshot calls.

use super::{
    Committed, Precondition, WorkspaceVersion, kept, rules,
    staged::{self, StagedHead},
};
use crate::{
    DomainError,
    chunk_store::manifests::readable_until,
    object_env::ObjectEnv,
    sql::SqlStore,
    workspace::{ContentHash, pages::ManifestHead},
};
use serde::{Deserialize, Serialize};

/// What a commit hands the object: the checked head and what its pages
/// name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitArgs {
    /// The head, whose pages were read and checked.
    pub head: ManifestHead,
    /// Regular files the pages hold.
    pub files: u64,
    /// Every chunk the files name, once each.
    pub chunks: Vec<ContentHash>,
    /// `If-Match` / `If-None-Match`, checked again here.
    pub precondition: Precondition,
    /// The watermark given, if any (else the agent's last seq).
    pub event_watermark: Option<u64>,
    /// How long the superseded version's chunks stay readable (ms).
    pub grace_ms: i64,
}

/// One workspace operation on the agent object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum WorkspaceCall {
    /// The current version.
    Current,
    /// Version `version`: the current one or a kept one.
    Version {
        /// Its number.
        version: u64,
    },
    /// Makes a checked manifest the current version.
    Commit(Box<CommitArgs>),
    /// Drops the current version.
    Remove {
        /// How long its chunks stay readable (ms).
        grace_ms: i64,
    },
    /// Records the head an import gave.
    StageHead(Box<StagedHead>),
    /// The head the import in progress gave, if any.
    StagedHead,
    /// Stages the import's checked version (not current until the
    /// import's commit).
    Stage(Box<CommitArgs>),
    /// Part `part` of what the current version (or kept version
    /// `version`) names, with sizes.
    ExportPart {
        /// 0: the pages; `n`: the `n`th row of chunks.
        part: u64,
        /// A version other than the current one (a fork's point).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<u64>,
    },
}

/// The answer to a [`WorkspaceCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
pub enum WorkspaceReply {
    /// The current version, if any.
    Current(Option<WorkspaceVersion>),
    /// A version asked for by number.
    Version(WorkspaceVersion),
    /// A commit's outcome.
    Committed(Committed),
    /// The head an import gave, if any.
    Staged(Option<StagedHead>),
    /// Chunk names with their sizes; `None` past the last part.
    Names(Option<Vec<(ContentHash, u64)>>),
    /// Nothing to say.
    Done,
}

/// Runs one call on the agent's store, inside the caller's transaction.
pub fn execute(
    store: &impl SqlStore,
    call: &WorkspaceCall,
    env: &ObjectEnv,
) -> Result<WorkspaceReply, DomainError> {
    Ok(match call {
        WorkspaceCall::Current => WorkspaceReply::Current(rules::current(store)?),
        WorkspaceCall::Commit(args) => {
            let (committed, previous) = rules::commit(store, args, env.now_ms)?;
            if committed.created {
                let now = (env.now_ms, &env.retention);
                kept::keep(store, previous.as_ref(), env.now_ms)?;
                let readable_until = readable_until(env.now_ms, args.grace_ms);
                kept::made_current(store, &committed.version, now, readable_until)?;
            }
            WorkspaceReply::Committed(committed)
        }
        WorkspaceCall::Remove { grace_ms } => {
            let readable_until = readable_until(env.now_ms, *grace_ms);
            kept::remove(store, readable_until)?;
            WorkspaceReply::Done
        }
        WorkspaceCall::Version { version } => WorkspaceReply::Version(kept::find(store, *version)?),
        WorkspaceCall::StageHead(head) => {
            staged::record_head(store, head)?;
            WorkspaceReply::Done
        }
        WorkspaceCall::StagedHead => WorkspaceReply::Staged(staged::head(store)?),
        WorkspaceCall::Stage(args) => {
            staged::stage(store, args)?;
            WorkspaceReply::Done
        }
        WorkspaceCall::ExportPart { part, version } => {
            let chosen = match version {
                Some(version) => Some(kept::find(store, *version)?),
                None => rules::current(store)?,
            };
            WorkspaceReply::Names(rules::export_part(store, *part, chosen)?)
        }
    })
}

/// True when the call may change the object.
pub fn is_write(call: &WorkspaceCall) -> bool {
    !matches!(
        call,
        WorkspaceCall::Current
            | WorkspaceCall::Version { .. }
            | WorkspaceCall::StagedHead
            | WorkspaceCall::ExportPart { .. }
    )
}
