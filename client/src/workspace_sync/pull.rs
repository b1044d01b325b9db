//! The pull: refuse a folder that holds anything, read the current version's head, fetch its
//! pages (in batches, each checked against the head), rebuild and check the manifest, then
//! restore the tree (verified and atomic: [`workspace::restore`]) while the chunks are fetched
//! ahead of it in batches, each checked against its name. A chunk collected under the pull (a
//! newer version superseded this one meanwhile) starts it over from the new head, a bounded
//! number of times.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use stasis_domain::workspace::pages::{self, ManifestHead};
use stasis_domain::workspace::{ChunkRef, ContentHash, TreeLimits, TreeManifest};

use super::PullOptions;
use super::batches::{self, BATCHES_IN_FLIGHT};
use super::chunks::{CHUNK_NOT_FOUND, ChunkRoutes};
use super::held;
use super::prefetch::Prefetch;
use super::synced::{Synced, agent_key};
use super::wire::StoredManifest;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::snapshot::parallel;
use crate::workspace::{self, WorkspaceError};

/// Heads read before giving up on chunks that keep vanishing under the pull.
const HEAD_ROUNDS: usize = 3;

/// What a pull came to.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PullOutcome {
    /// The tree was restored.
    Restored(Restored),
    /// The agent has no workspace: nothing was written.
    NoWorkspace,
}

/// A restored version.
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// Its version.
    pub version: u64,
    /// Its root hash, verified over the tree as written.
    pub root_hash: ContentHash,
    /// The newest event seq it covers.
    pub event_watermark: Option<u64>,
    /// Regular files written.
    pub files: u64,
    /// Directories written.
    pub dirs: u64,
    /// Symbolic links written.
    pub symlinks: u64,
    /// Bytes written to files.
    pub bytes: u64,
    /// Manifest pages fetched.
    pub pages_fetched: u64,
    /// Chunks fetched (a chunk fetched again for a later use counts again).
    pub chunks_fetched: u64,
    /// Bytes of chunks and pages fetched.
    pub bytes_fetched: u64,
    /// The pull's time.
    pub took_ms: u64,
}

/// Restores `agent`'s current workspace as the folder `target` (absent or empty).
pub fn pull(
    client: &Client,
    agent: &AgentRef,
    target: &Path,
    options: &PullOptions,
) -> Result<PullOutcome> {
    let started = Instant::now();
    refuse_non_empty(target)?;
    let routes = ChunkRoutes {
        client,
        agent,
        deadline: options.deadline,
    };
    let mut round = 0;
    loop {
        round += 1;
        let Some(stored) = routes.current()? else {
            return Ok(PullOutcome::NoWorkspace);
        };
        match restore(&routes, &stored, target) {
            Err(error) if vanished_chunk(&error) && round < HEAD_ROUNDS => continue,
            Err(error) => return Err(error),
            Ok((mut restored, names)) => {
                options.state.drop_index();
                held::forget(&options.state);
                options.state.save(&Synced {
                    agent: agent_key(agent),
                    root_hash: restored.root_hash,
                    version: restored.version,
                    chunking: stored.head.chunking.clone(),
                })?;
                // A cache: a push whose record is lost asks about every name.
                let _ = held::save(&options.state, &restored.root_hash, names);
                restored.took_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(0);
                return Ok(PullOutcome::Restored(restored));
            }
        }
    }
}

/// A restore never merges: a folder that holds anything is refused before anything is fetched.
fn refuse_non_empty(target: &Path) -> Result<()> {
    let refused = |detail: &str| WorkspaceError::TargetNotEmpty {
        path: target.to_owned(),
        detail: detail.to_owned(),
    };
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            let mut names = std::fs::read_dir(target)
                .map_err(|e| Error::io(format!("reading {}", target.display()), e))?;
            if names.next().is_some() {
                return Err(refused("the folder is not empty").into());
            }
            Ok(())
        }
        Ok(_) => Err(refused("it is not a folder").into()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(Error::io(format!("inspecting {}", target.display()), err)),
    }
}

/// A chunk or page the store no longer holds (collected after a newer version superseded the
/// one being pulled).
fn vanished_chunk(error: &Error) -> bool {
    match error.root() {
        Error::Workspace(e) => match &**e {
            WorkspaceError::Fetch { source, .. } => source.code() == Some(CHUNK_NOT_FOUND),
            _ => false,
        },
        other => other.code() == Some(CHUNK_NOT_FOUND),
    }
}

/// Fetches the pages and the chunks of `stored` and restores its tree as `target`; with what
/// was restored, every distinct chunk and page the version names.
fn restore(
    routes: &ChunkRoutes<'_>,
    stored: &StoredManifest,
    target: &Path,
) -> Result<(Restored, Vec<ContentHash>)> {
    let bytes_fetched = AtomicU64::new(0);
    let chunks_fetched = AtomicU64::new(0);
    let manifest = fetch_manifest(routes, &stored.head, &bytes_fetched)?;
    let fetch = |chunks: &[ChunkRef]| {
        let sized: Vec<(ContentHash, u64)> = chunks
            .iter()
            .map(|c| (c.sha256, u64::from(c.size)))
            .collect();
        let fetched = routes.fetch_batch(&sized)?;
        chunks_fetched.fetch_add(fetched.len() as u64, Ordering::Relaxed);
        let bytes: u64 = fetched.iter().map(|b| b.len() as u64).sum();
        bytes_fetched.fetch_add(bytes, Ordering::Relaxed);
        Ok(fetched)
    };
    let root = stored.head.root_hash;
    let stats = Prefetch::run(&manifest, &fetch, |take| {
        let mut take = take;
        workspace::restore(&manifest, &root, target, &mut take)
    })?;
    let mut names = manifest.unique_chunks();
    names.extend(stored.head.pages.iter().map(|p| p.sha256));
    let restored = Restored {
        version: stored.version,
        root_hash: root,
        event_watermark: stored.event_watermark,
        files: stats.files,
        dirs: stats.dirs,
        symlinks: stats.symlinks,
        bytes: stats.bytes,
        pages_fetched: stored.head.pages.len() as u64,
        chunks_fetched: chunks_fetched.load(Ordering::Relaxed),
        bytes_fetched: bytes_fetched.load(Ordering::Relaxed),
        took_ms: 0,
    };
    Ok((restored, names))
}

/// The pages of `head`, fetched in batches and checked in order into the whole manifest.
fn fetch_manifest(
    routes: &ChunkRoutes<'_>,
    head: &ManifestHead,
    bytes_fetched: &AtomicU64,
) -> Result<TreeManifest> {
    let mut seen = HashSet::new();
    let distinct: Vec<(ContentHash, u64)> = head
        .pages
        .iter()
        .filter(|p| seen.insert(p.sha256))
        .map(|p| (p.sha256, u64::from(p.size)))
        .collect();
    let fetched: Mutex<HashMap<ContentHash, Vec<u8>>> = Mutex::default();
    let groups = batches::group(&distinct);
    parallel::for_each(&groups, BATCHES_IN_FLIGHT, |batch| {
        let pages = routes.fetch_batch(batch)?;
        let bytes: u64 = pages.iter().map(|b| b.len() as u64).sum();
        bytes_fetched.fetch_add(bytes, Ordering::Relaxed);
        let mut fetched = fetched.lock().unwrap_or_else(|p| p.into_inner());
        fetched.extend(batch.iter().map(|(hash, _)| *hash).zip(pages));
        Ok::<(), Error>(())
    })?;
    let fetched = fetched.into_inner().unwrap_or_else(|p| p.into_inner());
    let pages: Vec<&[u8]> = head
        .pages
        .iter()
        .map(|p| fetched.get(&p.sha256).map_or(&[][..], Vec::as_slice))
        .collect();
    // The server enforced its limits; here only the rules matter.
    let unlimited = TreeLimits {
        max_total_size: u64::MAX,
        max_entries: u64::MAX,
        max_chunk_refs: u64::MAX,
    };
    let manifest = pages::assemble(head, pages, &unlimited).map_err(WorkspaceError::from)?;
    Ok(manifest)
}
