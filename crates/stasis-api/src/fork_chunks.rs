//! A fork's chunks: which the source's versions at the point name, where
//! each key lives (its origin), the holds each origin keeps for the fork,
//! the fork's adoption of them, and their release when the fork is
//! destroyed. No chunk byte is read or written.

use crate::{AfterCommit, Snapshots, error::ApiError};
use stasis_domain::{
    DomainError, Refusal,
    chunk_store::{
        self, lineage, operations as chunk_op,
        origins::{origin_name, parse_origin},
        ports::{BlobStore as _, ChunkObject as _},
    },
    ids::AgentKey,
    operation::agent as op,
    workspace_store::{operations as workspace_op, ports::WorkspaceObject as _},
};
use std::collections::BTreeMap;

/// Chunk names per object call (a 100 MB kilo.db has ~3,000 chunks of
/// 32 KiB: one call each step; 10,000 names are ~650 KB of JSON).
const BATCH: usize = 10_000;
/// The most rows of a workspace version's references read (each holds up
/// to 30,000 names): far past any workspace the limit lets in.
const MAX_PARTS: u64 = 10_000;

/// The chunks a fork takes, each with its size and origin (`rig/agent`).
#[derive(Debug, Default)]
pub(crate) struct Taken {
    /// Name, size and origin, once each.
    pub chunks: Vec<(String, u64, String)>,
}

impl Taken {
    /// The names held in each origin.
    pub fn by_origin(&self) -> BTreeMap<String, Vec<String>> {
        let mut by_origin: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, _, origin) in &self.chunks {
            by_origin
                .entry(origin.clone())
                .or_default()
                .push(name.clone());
        }
        by_origin
    }
}

/// Every name workspace version `version` of the source names: its pages,
/// then its files' chunks.
pub(crate) async fn workspace_names(
    objects: &impl Snapshots,
    source: &AgentKey,
    version: u64,
) -> Result<Vec<String>, ApiError> {
    let object = objects.snapshot_object(source);
    let mut names = Vec::new();
    for part in 0..MAX_PARTS {
        let Some(named) = object
            .run_workspace(workspace_op::version_part(part, version))
            .await?
        else {
            break;
        };
        names.extend(named.iter().map(|(hash, _)| hash.to_string()));
    }
    Ok(names)
}

/// Where the source's chunks `names` are: each once, with its size and
/// origin (the source itself for its own).
pub(crate) async fn locate(
    objects: &impl Snapshots,
    source: &AgentKey,
    names: Vec<String>,
) -> Result<Taken, ApiError> {
    let mut seen = std::collections::HashSet::new();
    let names: Vec<String> = names
        .into_iter()
        .filter(|n| seen.insert(n.clone()))
        .collect();
    let object = objects.snapshot_object(source);
    let own = origin_name(&source.rig, &source.agent);
    let mut taken = Taken::default();
    for batch in names.chunks(BATCH) {
        let located = object.run_chunk(chunk_op::located(batch.to_vec())).await?;
        for (name, found) in batch.iter().zip(located) {
            let Some((size, origin)) = found else {
                return Err(DomainError::ChunksMissing {
                    missing: vec![name.clone()],
                }
                .into());
            };
            taken
                .chunks
                .push((name.clone(), size, origin.unwrap_or_else(|| own.clone())));
        }
    }
    Ok(taken)
}

/// The agent an origin names, in the fork's town.
pub(crate) fn origin_key(town: &str, origin: &str) -> Result<AgentKey, ApiError> {
    let (rig, agent) = parse_origin(origin)?;
    Ok(AgentKey {
        town: town.to_owned(),
        rig,
        agent,
    })
}

/// Each origin holds what the fork takes from it (before the fork names
/// any of it). Answers the origins now holding for the fork.
pub(crate) async fn hold(
    objects: &impl Snapshots,
    fork: &AgentKey,
    taken: &Taken,
) -> Result<Vec<String>, ApiError> {
    let holder = origin_name(&fork.rig, &fork.agent);
    let mut held = Vec::new();
    for (origin, names) in taken.by_origin() {
        let key = origin_key(&fork.town, &origin)?;
        let step = chunk_op::hold(holder.clone(), names);
        objects.snapshot_object(&key).run_chunk(step).await?;
        held.push(origin);
    }
    Ok(held)
}

/// The fork's holds in `origins` go (a refused fork, or its destroy);
/// answers the origins that could not be reached (a later destroy of the
/// fork's id retries them).
pub(crate) async fn release(
    objects: &impl Snapshots,
    fork: &AgentKey,
    origins: &[String],
) -> Vec<String> {
    let holder = origin_name(&fork.rig, &fork.agent);
    let mut failed = Vec::new();
    for origin in origins {
        let released = match origin_key(&fork.town, origin) {
            Ok(key) => {
                let step = chunk_op::release_hold(holder.clone(), objects.snapshot_grace_ms());
                let released = objects.snapshot_object(&key).run_chunk(step).await;
                // What only the hold named goes (after the grace, else with
                // the origin's next collection).
                if released.is_ok() {
                    objects.snapshot_tidy(&key, AfterCommit::Collect).await;
                }
                released.map(drop)
            }
            Err(_) => Ok(()),
        };
        if released.is_err() {
            failed.push(origin.clone());
        }
    }
    failed
}

/// The fork records the chunks it takes as its own rows naming their
/// origin, kept for the pending time (its import names them).
pub(crate) async fn adopt(
    objects: &impl Snapshots,
    fork: &AgentKey,
    taken: &Taken,
) -> Result<(), ApiError> {
    let object = objects.snapshot_object(fork);
    for batch in taken.chunks.chunks(BATCH) {
        let step = chunk_op::adopt(batch.to_vec(), objects.snapshot_pending_ttl_ms());
        object.run_chunk(step).await?;
    }
    Ok(())
}

/// Writes the fork's lineage key: its ancestors' folders, its source
/// first, so that its reads find the chunks it took.
pub(crate) async fn write_lineage_key(
    objects: &impl Snapshots,
    fork: &AgentKey,
    ancestors: &[String],
) -> Result<(), ApiError> {
    let mut folders = Vec::with_capacity(ancestors.len());
    for ancestor in ancestors {
        folders.push(chunk_store::key_prefix(&origin_key(&fork.town, ancestor)?));
    }
    let key = lineage::lineage_key(&chunk_store::key_prefix(fork));
    let blobs = objects.snapshot_blobs()?;
    blobs.put(&key, &lineage::encode(&folders)).await?;
    Ok(())
}

/// Deletes the fork's lineage key (the fork is destroyed, or was refused).
pub(crate) async fn delete_lineage_key(objects: &impl Snapshots, fork: &AgentKey) {
    let key = lineage::lineage_key(&chunk_store::key_prefix(fork));
    if let Ok(blobs) = objects.snapshot_blobs() {
        let _ = blobs.delete(&key).await;
    }
}

/// A destroyed agent that was a fork releases its holds in its origins
/// and its lineage key. Answers whether it was a fork. Called before the
/// destroy reads `existed`, so that a destroy cut short is finished by a
/// retried `DELETE`.
pub(crate) async fn release_lineage<O: Snapshots>(
    objects: &O,
    key: &AgentKey,
) -> Result<bool, ApiError> {
    let Some(lineage) = objects.agent(key, op::fork_lineage()).await? else {
        return Ok(false);
    };
    let failed = release(objects, key, &lineage.holds_in).await;
    if !failed.is_empty() {
        return Err(ApiError::from(DomainError::Unavailable(Refusal::new(
            "origin_unavailable",
            format!(
                "the fork's holds in {} could not be released; delete it again shortly",
                failed.join(", ")
            ),
        ))));
    }
    delete_lineage_key(objects, key).await;
    objects.agent(key, op::fork_clear_lineage()).await?;
    Ok(true)
}
