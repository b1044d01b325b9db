//! The fork's state, written into its object as an import (the staging
//! steps of `PUT /import`, so that it appears whole in one commit or not
//! at all): the source's events up to the point, the sessions that have
//! any of them, the checkpoint and memory of the point, and kilo.db and
//! the workspace as manifests of adopted chunks.

use crate::fork_chunks::{self as chunks, Taken};
use crate::{Snapshots, error::ApiError, import::Batch};
use stasis_domain::{
    DomainError,
    agent_state::{ImportBatch, ManifestAgent, ManifestEvent, ManifestMemory, ManifestSession},
    event_log::ReadQuery,
    history::StateAt,
    ids::AgentKey,
    limits::MAX_READ_LIMIT,
    operation::{agent as op, snapshot as snapshot_op},
    snapshot::{
        StagedSnapshot,
        chunk_calls::{ChunkSource, Plan as SnapshotPlan},
        chunk_saga,
        ports::SnapshotObject as _,
        saga as snapshot_saga,
    },
    workspace_store::{
        operations as workspace_op, ports::WorkspaceObject as _, staged::StagedHead,
    },
};

/// The most pages of events read (each up to [`MAX_READ_LIMIT`]).
const MAX_EVENT_PAGES: u64 = 100_000;
/// Chunk names per record call of the snapshot's manifest (as
/// `fork_chunks`' calls: a 100 MB kilo.db's in one).
const RECORD_BATCH: usize = 10_000;

/// What the fork takes of its source, read before anything is written.
pub(super) struct Plan {
    /// kilo.db's version at the point, as a manifest (or inline bytes).
    pub snapshot: Option<SnapshotPlan>,
    /// The workspace's version at the point.
    pub workspace: Option<stasis_domain::workspace_store::WorkspaceVersion>,
    /// Every chunk taken, located.
    pub taken: Taken,
}

/// Reads what the source's versions at the point name.
pub(super) async fn plan(
    objects: &impl Snapshots,
    source: &AgentKey,
    state: &StateAt,
) -> Result<Plan, ApiError> {
    let object = objects.snapshot_object(source);
    let mut names = Vec::new();
    let snapshot = match state.db_snapshot {
        Some(at) => chunk_saga::plan_version(&object, true, at.version).await?,
        None => None,
    };
    if let Some(plan) = &snapshot
        && plan.source == ChunkSource::Chunks
    {
        names.extend(plan.chunks.iter().cloned());
    }
    let workspace = match state.workspace {
        Some(at) => Some(
            object
                .run_workspace(workspace_op::version(at.version))
                .await?,
        ),
        None => None,
    };
    if let Some(version) = &workspace {
        names.extend(chunks::workspace_names(objects, source, version.version).await?);
    }
    let taken = chunks::locate(objects, source, names).await?;
    Ok(Plan {
        snapshot,
        workspace,
        taken,
    })
}

/// Stages everything in the fork's import `ticket`.
pub(super) async fn stage(
    objects: &impl Snapshots,
    (source, fork): (&AgentKey, &AgentKey),
    ticket: u64,
    (state, role, plan): (&StateAt, String, &Plan),
) -> Result<(), ApiError> {
    let stage = |batch| async move {
        objects
            .agent(fork, op::import_stage(ticket, batch))
            .await
            .map(drop)
    };
    let metadata = objects.agent(source, op::get_agent()).await?.metadata;
    stage(ImportBatch::Agent(Some(ManifestAgent { role, metadata }))).await?;
    let checkpoint = match state.checkpoint {
        Some(at) => Some(
            objects
                .agent(source, op::get_checkpoint_version(at.version))
                .await?
                .document,
        ),
        None => None,
    };
    stage(ImportBatch::Checkpoint(checkpoint)).await?;
    events(objects, (source, fork), ticket, state.seq).await?;
    sessions(objects, (source, fork), ticket, state.seq).await?;
    memory(objects, (source, fork), ticket, state).await?;
    snapshot(objects, fork, ticket, plan).await?;
    if let Some(version) = &plan.workspace {
        let head = StagedHead {
            head: version.head.clone(),
            event_watermark: Some(version.event_watermark),
        };
        let object = objects.snapshot_object(fork);
        object.run_workspace(workspace_op::stage_head(head)).await?;
        crate::import::stage_workspace_version(objects, fork).await?;
    }
    Ok(())
}

/// Stages a batch, if any.
async fn flush(
    objects: &impl Snapshots,
    fork: &AgentKey,
    ticket: u64,
    batch: Option<ImportBatch>,
) -> Result<(), ApiError> {
    if let Some(batch) = batch {
        objects.agent(fork, op::import_stage(ticket, batch)).await?;
    }
    Ok(())
}

/// The source's events `1..=seq`, a page at a time.
async fn events(
    objects: &impl Snapshots,
    (source, fork): (&AgentKey, &AgentKey),
    ticket: u64,
    seq: u64,
) -> Result<(), ApiError> {
    let mut batch = Batch::default();
    let mut after = 0;
    for _ in 0..MAX_EVENT_PAGES {
        if after >= seq {
            break;
        }
        let query = ReadQuery {
            limit: MAX_READ_LIMIT,
            ..ReadQuery::after(after)
        };
        let page = objects.agent(source, op::read_events(query)).await?;
        for event in page.events.into_iter().take_while(|e| e.seq <= seq) {
            let len = event.data.len() + 128;
            let event = ManifestEvent {
                seq: event.seq,
                event_type: event.event_type,
                session_id: event.session_id,
                data: event.data,
                created_at: Some(event.created_at_ms),
            };
            flush(objects, fork, ticket, batch.add_event(event, len)).await?;
        }
        if !page.has_more || page.next_after <= after {
            break;
        }
        after = page.next_after;
    }
    flush(objects, fork, ticket, batch.take()).await
}

/// The source's sessions that have an event at or before `seq`.
async fn sessions(
    objects: &impl Snapshots,
    (source, fork): (&AgentKey, &AgentKey),
    ticket: u64,
    seq: u64,
) -> Result<(), ApiError> {
    let mut batch = Batch::default();
    for session in objects.agent(source, op::list_sessions()).await? {
        if session.first_seq == 0 || session.first_seq > seq {
            continue;
        }
        let len = session.metadata.len() + 256;
        let session = ManifestSession {
            session_id: session.session_id,
            status: session.status,
            metadata: session.metadata,
            first_seq: session.first_seq,
            last_seq: session.last_seq.min(seq),
            event_count: 0,
            created_at: Some(session.created_at),
            updated_at: Some(session.updated_at),
        };
        flush(objects, fork, ticket, batch.add_session(session, len)).await?;
    }
    flush(objects, fork, ticket, batch.take()).await
}

/// Every memory key present at the point, with its value then.
async fn memory(
    objects: &impl Snapshots,
    (source, fork): (&AgentKey, &AgentKey),
    ticket: u64,
    state: &StateAt,
) -> Result<(), ApiError> {
    let mut batch = Batch::default();
    for (key, at) in &state.memory {
        let entry = objects
            .agent(source, op::get_memory_version(key.clone(), at.version))
            .await?;
        let len = entry.value.len() + key.len() + 64;
        let entry = ManifestMemory {
            key: entry.key,
            value: entry.value,
            updated_at: Some(entry.updated_at),
        };
        flush(objects, fork, ticket, batch.add_memory(entry, len)).await?;
    }
    flush(objects, fork, ticket, batch.take()).await
}

/// kilo.db at the point: a manifest of adopted chunks under a version the
/// fork reserves (its chunks were adopted already), or an inline or
/// single-key snapshot's bytes written again (at most the inline limit,
/// or the layout from before chunks).
async fn snapshot(
    objects: &impl Snapshots,
    fork: &AgentKey,
    ticket: u64,
    plan: &Plan,
) -> Result<(), ApiError> {
    let Some(source) = &plan.snapshot else {
        return flush(objects, fork, ticket, Some(ImportBatch::Snapshot(None))).await;
    };
    let object = objects.snapshot_object(fork);
    let meta = &source.meta;
    let staged = match &source.source {
        ChunkSource::Chunks => {
            let ttl = objects.snapshot_pending_ttl_ms();
            let reserved = object
                .run(snapshot_op::import_reserve(source.chunk_size, ttl))
                .await?;
            let sizes: std::collections::HashMap<&str, u64> = plan
                .taken
                .chunks
                .iter()
                .map(|(name, size, _)| (name.as_str(), *size))
                .collect();
            let sized: Vec<(String, u64)> = source
                .chunks
                .iter()
                .map(|name| (name.clone(), sizes.get(name.as_str()).copied().unwrap_or(0)))
                .collect();
            for batch in sized.chunks(RECORD_BATCH) {
                let step = snapshot_op::import_record(reserved.version, batch.to_vec(), ttl);
                object.run(step).await?;
            }
            StagedSnapshot {
                version: reserved.version,
                sha256: meta.sha256.clone(),
                size: meta.size,
                event_watermark: meta.event_watermark,
                kv_key: None,
                inline: None,
                chunk_size: Some(source.chunk_size),
            }
        }
        ChunkSource::Inline { bytes } => {
            let bytes = bytes.clone().unwrap_or_default();
            rewrite(objects, fork, meta, &bytes).await?
        }
        ChunkSource::Key { key } => {
            let blobs = objects.snapshot_blobs()?;
            let bytes = stasis_domain::chunk_store::ports::fetch_visible(&blobs, key).await?;
            rewrite(objects, fork, meta, &bytes).await?
        }
    };
    flush(
        objects,
        fork,
        ticket,
        Some(ImportBatch::Snapshot(Some(staged))),
    )
    .await
}

/// A small or pre-chunks snapshot's bytes, stored again under the fork.
async fn rewrite(
    objects: &impl Snapshots,
    fork: &AgentKey,
    meta: &stasis_domain::snapshot::SnapshotMeta,
    bytes: &[u8],
) -> Result<StagedSnapshot, ApiError> {
    let request = stasis_domain::snapshot::PutRequest {
        expected_sha256: Some(meta.sha256.clone()),
        precondition: None,
        event_watermark: Some(meta.event_watermark),
        inline_limit: objects.snapshot_inline_limit(),
        key_prefix: stasis_domain::chunk_store::key_prefix(fork),
        limit: objects.snapshot_limit(),
        pending_ttl_ms: objects.snapshot_pending_ttl_ms(),
        stale_before: objects.snapshot_claims_stale_before(),
        grace_ms: 0,
    };
    let blobs = objects.snapshot_blobs()?;
    let object = objects.snapshot_object(fork);
    snapshot_saga::stage(&object, &blobs, &request, bytes)
        .await
        .map_err(|err: DomainError| err.into())
}
