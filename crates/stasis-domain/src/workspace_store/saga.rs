//! A workspace commit across the agent's object and the KV store: the
//! preconditions, every page read and checked one at a time, then the
//! object's one commit call. Collection after it is the chunk store's
//! ([`crate::chunk_store::saga::collect`]), run by the caller.

use super::{CommitArgs, Committed, Precondition, operations as op, ports::WorkspaceObject};
use crate::{
    DomainError,
    chunk_store::{ports::BlobStore, saga as chunks},
    workspace::{
        ContentHash, Node, TOO_LARGE, TreeLimits,
        pages::{ManifestHead, PageItem, PagesChecker},
    },
};
use std::collections::HashSet;

/// What a manifest commit asks for.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    /// The head as pushed.
    pub head: ManifestHead,
    /// `If-Match` / `If-None-Match`.
    pub precondition: Precondition,
    /// The watermark given, if any.
    pub event_watermark: Option<u64>,
    /// The limits the tree is checked against (the workspace limit is
    /// `max_total_size`).
    pub limits: TreeLimits,
    /// How long the superseded version's chunks stay readable (ms).
    pub grace_ms: i64,
    /// How long the pages asked for are kept from collection (ms).
    pub pending_ttl_ms: i64,
}

/// Commits a paged manifest whose pages and chunks the agent's store
/// holds. Refusals, each before anything changed: 412 (preconditions,
/// checked first), 409 `chunks_missing` (pages, then chunks), 400
/// `invalid_workspace_manifest`, 413 `workspace_too_large`.
pub async fn commit(
    object: &impl WorkspaceObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    request: CommitRequest,
) -> Result<Committed, DomainError> {
    let current = object.run_workspace(op::current()).await?;
    request.precondition.check(current.as_ref())?;
    if let Some(current) = current
        && current.head.root_hash == request.head.root_hash
    {
        return Ok(Committed {
            version: current,
            created: false,
        });
    }
    let checked = check(object, blobs, key_prefix, &request).await?;
    let args = CommitArgs {
        head: request.head,
        files: checked.files,
        chunks: checked.chunks,
        precondition: request.precondition,
        event_watermark: request.event_watermark,
        grace_ms: request.grace_ms,
    };
    object.run_workspace(op::commit(args)).await
}

/// What a head's pages hold, once read and checked.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Regular files.
    pub files: u64,
    /// Every chunk the files name, once each, in order of first mention.
    pub chunks: Vec<ContentHash>,
}

/// Reads and checks the head's pages one at a time: 413 past the limit
/// (from the head itself first), 409 `chunks_missing` for pages the store
/// lacks (kept from collection for `pending_ttl_ms` once asked for), 400
/// `invalid_workspace_manifest` for pages that break the rules or do not
/// make the head's tree. Whether the chunks are held is the commit's
/// check.
pub async fn check(
    object: &impl WorkspaceObject,
    blobs: &impl BlobStore,
    key_prefix: &str,
    request: &CommitRequest,
) -> Result<Checked, DomainError> {
    let limit = request.limits.max_total_size;
    if request.head.total_size > limit {
        // Known from the head before any page is read.
        return Err(DomainError::too_large(
            TOO_LARGE,
            format!("a workspace holds at most {limit} bytes of files"),
            limit,
        ));
    }
    let mut checker = PagesChecker::new(&request.head, request.limits)?;
    let page_names: Vec<String> = request
        .head
        .pages
        .iter()
        .map(|page| page.sha256.to_hex())
        .collect();
    let lacking = chunks::missing(object, page_names.clone(), request.pending_ttl_ms).await?;
    if !lacking.is_empty() {
        return Err(DomainError::ChunksMissing { missing: lacking });
    }
    let mut named = Names::default();
    for name in &page_names {
        let bytes = chunks::read_chunk(blobs, key_prefix, name).await?;
        for item in checker.page(&bytes)? {
            named.add(&item);
        }
    }
    let summary = checker.finish()?;
    Ok(Checked {
        files: summary.files,
        chunks: named.order,
    })
}

/// The distinct chunks the pages name, in order of first mention.
#[derive(Default)]
struct Names {
    seen: HashSet<ContentHash>,
    order: Vec<ContentHash>,
}

impl Names {
    fn add(&mut self, item: &PageItem) {
        let refs = match item {
            PageItem::Entry(entry) => match &entry.node {
                Node::File(file) => file.chunks.as_slice(),
                _ => &[],
            },
            PageItem::MoreChunks { chunks, .. } => chunks.as_slice(),
        };
        for chunk in refs {
            if self.seen.insert(chunk.sha256) {
                self.order.push(chunk.sha256);
            }
        }
    }
}
