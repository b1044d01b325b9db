//! `/workspace`: the agent's working tree as a paged manifest in the
//! agent's chunk store. The chunk routes (`/workspace/missing`,
//! `/workspace/chunks/{sha256}`) are the `/db-snapshot` delta routes' own
//! code ([`crate::snapshot_delta`]); here are the manifest's commit and
//! read and the delete.

#![allow(
    clippy::disallowed_macros,
    clippy::disallowed_methods,
    reason = "the JsonSchema derive builds its schemas with json! and to_value over our own types, never stored data"
)]

use crate::{AfterCommit, Snapshots, body, error::ApiError, reply, snapshot::event_seq};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use serde::{Deserialize, Serialize};
use stasis_domain::{
    DomainError, chunk_store,
    ids::AgentKey,
    operation::agent as agent_op,
    workspace::{
        ChunkParams, ContentHash, INVALID_MANIFEST, TreeLimits,
        pages::{ManifestHead, PageRef},
    },
    workspace_store::{
        self, Precondition, WorkspaceVersion, operations as op, ports::WorkspaceObject, saga,
    },
};

/// How a manifest's files were cut, as the body carries it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChunkingBody {
    algorithm: String,
    min_size: u32,
    avg_size: u32,
    max_size: u32,
}

/// One page as the head names it.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageBody {
    /// The sha256 of the page's bytes (a chunk of the agent's store).
    sha256: String,
    /// Its length in bytes.
    size: u32,
}

/// `PUT /workspace/manifest`: a manifest head
/// (`stasis_domain::workspace::pages::ManifestHead`) and an optional
/// watermark.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestBody {
    format: u32,
    chunking: ChunkingBody,
    root_hash: String,
    entries: u64,
    total_size: u64,
    pages: Vec<PageBody>,
    #[serde(default)]
    event_watermark: Option<u64>,
}

impl ManifestBody {
    pub(crate) fn into_head(self) -> Result<(ManifestHead, Option<u64>), ApiError> {
        let hash = |what: &str, text: &str| {
            text.parse::<ContentHash>().map_err(|err| {
                ApiError::from(DomainError::invalid(
                    INVALID_MANIFEST,
                    format!("{what}: {err}"),
                ))
            })
        };
        let mut pages = Vec::with_capacity(self.pages.len());
        for (index, page) in self.pages.iter().enumerate() {
            pages.push(PageRef {
                sha256: hash(&format!("pages[{index}].sha256"), &page.sha256)?,
                size: page.size,
            });
        }
        let head = ManifestHead {
            format: self.format,
            chunking: ChunkParams {
                algorithm: self.chunking.algorithm,
                min_size: self.chunking.min_size,
                avg_size: self.chunking.avg_size,
                max_size: self.chunking.max_size,
            },
            root_hash: hash("root_hash", &self.root_hash)?,
            entries: self.entries,
            total_size: self.total_size,
            pages,
        };
        Ok((head, self.event_watermark))
    }
}

/// A workspace version as the API shows it: the head, and what the server
/// recorded with it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct VersionView {
    version: u64,
    format: u32,
    chunking: ChunkingBody,
    root_hash: String,
    entries: u64,
    files: u64,
    total_size: u64,
    /// Distinct chunks the files name (pages not counted).
    chunk_count: u64,
    page_count: usize,
    pages: Vec<PageBody>,
    event_watermark: u64,
    created_at: i64,
}

impl From<&WorkspaceVersion> for VersionView {
    fn from(v: &WorkspaceVersion) -> Self {
        let head = &v.head;
        Self {
            version: v.version,
            format: head.format,
            chunking: ChunkingBody {
                algorithm: head.chunking.algorithm.clone(),
                min_size: head.chunking.min_size,
                avg_size: head.chunking.avg_size,
                max_size: head.chunking.max_size,
            },
            root_hash: head.root_hash.to_hex(),
            entries: head.entries,
            files: v.files,
            total_size: head.total_size,
            chunk_count: v.chunk_count,
            page_count: head.pages.len(),
            pages: head
                .pages
                .iter()
                .map(|p| PageBody {
                    sha256: p.sha256.to_hex(),
                    size: p.size,
                })
                .collect(),
            event_watermark: v.event_watermark,
            created_at: v.created_at,
        }
    }
}

/// What a commit answers (the version without its pages).
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct CommittedView {
    version: u64,
    root_hash: String,
    entries: u64,
    files: u64,
    total_size: u64,
    chunk_count: u64,
    page_count: usize,
    event_watermark: u64,
    created_at: i64,
}

/// The workspace as the agent record shows it.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct SummaryView {
    version: u64,
    root_hash: String,
    files: u64,
    total_size: u64,
    event_watermark: u64,
    created_at: i64,
}

impl From<&WorkspaceVersion> for CommittedView {
    fn from(v: &WorkspaceVersion) -> Self {
        Self {
            version: v.version,
            root_hash: v.head.root_hash.to_hex(),
            entries: v.head.entries,
            files: v.files,
            total_size: v.head.total_size,
            chunk_count: v.chunk_count,
            page_count: v.head.pages.len(),
            event_watermark: v.event_watermark,
            created_at: v.created_at,
        }
    }
}

/// The agent's workspace as its record shows it, if it has one.
pub(crate) async fn summary(
    objects: &impl Snapshots,
    key: &AgentKey,
) -> Result<Option<SummaryView>, ApiError> {
    let current = current(objects, key).await?;
    Ok(current.as_ref().map(|v| SummaryView {
        version: v.version,
        root_hash: v.head.root_hash.to_hex(),
        files: v.files,
        total_size: v.head.total_size,
        event_watermark: v.event_watermark,
        created_at: v.created_at,
    }))
}

async fn current(
    objects: &impl Snapshots,
    key: &AgentKey,
) -> Result<Option<WorkspaceVersion>, ApiError> {
    Ok(objects
        .snapshot_object(key)
        .run_workspace(op::current())
        .await?)
}

/// `PUT /workspace/manifest`: commits a paged manifest whose pages and
/// chunks the agent's store holds.
pub async fn put_manifest(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response<Bytes>, ApiError> {
    let precondition = precondition(headers)?;
    let header_seq = event_seq(headers)?;
    let request: ManifestBody = body::parse_json(body)?;
    let (head, watermark) = request.into_head()?;
    let limits = TreeLimits {
        max_total_size: objects.workspace_limit(),
        ..TreeLimits::default()
    };
    let commit = saga::CommitRequest {
        head,
        precondition,
        event_watermark: watermark.or(header_seq),
        limits,
        grace_ms: objects.snapshot_grace_ms(),
        pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
    };
    let committed = saga::commit(
        &objects.snapshot_object(key),
        &objects.snapshot_blobs()?,
        &chunk_store::key_prefix(key),
        commit,
    )
    .await?;
    let status = if committed.created {
        objects.snapshot_tidy(key, AfterCommit::Collect).await;
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut response = reply::json(status, &CommittedView::from(&committed.version));
    tag(response.headers_mut(), &committed.version);
    Ok(response)
}

/// `GET /workspace/manifest`: the current version's head.
pub async fn get_manifest(
    objects: &impl Snapshots,
    key: &AgentKey,
    headers: &HeaderMap,
    version: Option<u64>,
) -> Result<Response<Bytes>, ApiError> {
    let current = match version {
        Some(version) => {
            objects
                .agent(key, agent_op::workspace(op::version(version)))
                .await?
        }
        None => current(objects, key)
            .await?
            .ok_or_else(|| ApiError::from(workspace_store::not_found()))?,
    };
    if let Some(wanted) = if_none_match(headers)?
        && wanted.is_none_or(|roots| roots.contains(&current.head.root_hash))
    {
        let mut response = Response::new(Bytes::new());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        tag(response.headers_mut(), &current);
        return Ok(response);
    }
    let mut response = reply::json(StatusCode::OK, &VersionView::from(&current));
    tag(response.headers_mut(), &current);
    Ok(response)
}

/// `DELETE /workspace`: the version goes; its chunks no other version
/// names are collected after the grace.
pub async fn delete(objects: &impl Snapshots, key: &AgentKey) -> Result<Response<Bytes>, ApiError> {
    let remove = op::remove(objects.snapshot_grace_ms());
    objects.agent(key, agent_op::workspace(remove)).await?;
    objects.snapshot_tidy(key, AfterCommit::Collect).await;
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::NO_CONTENT;
    Ok(response)
}

fn tag(headers: &mut HeaderMap, version: &WorkspaceVersion) {
    if let Ok(value) = HeaderValue::from_str(&version.etag()) {
        headers.insert(header::ETAG, value);
    }
}

/// `If-Match` (root hashes or `*`) and `If-None-Match: *`.
fn precondition(headers: &HeaderMap) -> Result<Precondition, ApiError> {
    let if_match = etags(headers, header::IF_MATCH)?;
    let if_none_match_any = match etags(headers, header::IF_NONE_MATCH)? {
        None => false,
        Some(None) => true,
        Some(Some(_)) => {
            return Err(ApiError::invalid_request(
                "a manifest commit takes If-None-Match: * only (no version may exist)",
            ));
        }
    };
    Ok(Precondition {
        if_match,
        if_none_match_any,
    })
}

fn if_none_match(headers: &HeaderMap) -> Result<Option<Option<Vec<ContentHash>>>, ApiError> {
    etags(headers, header::IF_NONE_MATCH)
}

/// A list of quoted root hashes (`Some(Some(..))`) or `*` (`Some(None)`).
fn etags(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<Option<Vec<ContentHash>>>, ApiError> {
    let Some(value) = headers.get(&name) else {
        return Ok(None);
    };
    let value = value
        .to_str()
        .map_err(|_| ApiError::invalid_request(format!("{name} must be ASCII text")))?
        .trim();
    if value == "*" {
        return Ok(Some(None));
    }
    let mut roots = Vec::new();
    for item in value.split(',') {
        let item = item.trim();
        let bare = item.strip_prefix("W/").unwrap_or(item);
        let bare = bare
            .strip_prefix('"')
            .and_then(|b| b.strip_suffix('"'))
            .unwrap_or(bare);
        if bare.is_empty() || bare.contains('"') {
            return Err(ApiError::invalid_request(format!(
                "{name} must be * or a list of quoted ETags"
            )));
        }
        // An ETag that is no root hash names no version: it never matches.
        roots.extend(bare.parse::<ContentHash>().ok());
    }
    Ok(Some(Some(roots)))
}
