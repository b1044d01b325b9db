//! The pull: refuse a folder that holds anything, read the current version's head, fetch its
//! pages (8 at a time, each checked against the head), rebuild and check the manifest, then
//! restore the tree (verified and atomic: [`workspace::restore`]) while the chunks are fetched
//! ahead of it in parallel, each checked against its name. A chunk collected under the pull (a
//! newer version superseded this one meanwhile) starts it over from the new head, a bounded
//! number of times.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use stasis_domain::workspace::pages::{self, ManifestHead};
use stasis_domain::workspace::{ChunkRef, ContentHash, TreeLimits, TreeManifest};

use super::PullOptions;
use super::chunks::{CHUNK_NOT_FOUND, ChunkRoutes};
use super::prefetch::Prefetch;
use super::synced::{Synced, agent_key};
use super::wire::StoredManifest;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::snapshot::parallel::{self, TRANSFERS_IN_FLIGHT};
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
            Ok(mut restored) => {
                options.state.drop_index();
                options.state.save(&Synced {
                    agent: agent_key(agent),
                    root_hash: restored.root_hash,
                    version: restored.version,
                    chunking: stored.head.chunking.clone(),
                })?;
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

/// Fetches the pages and the chunks of `stored` and restores its tree as `target`.
fn restore(routes: &ChunkRoutes<'_>, stored: &StoredManifest, target: &Path) -> Result<Restored> {
    let bytes_fetched = AtomicU64::new(0);
    let chunks_fetched = AtomicU64::new(0);
    let manifest = fetch_manifest(routes, &stored.head, &bytes_fetched)?;
    let fetch = |chunk: &ChunkRef| {
        let bytes = routes.fetch(&chunk.sha256, u64::from(chunk.size))?;
        chunks_fetched.fetch_add(1, Ordering::Relaxed);
        bytes_fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        Ok(bytes)
    };
    let root = stored.head.root_hash;
    let stats = Prefetch::run(&manifest, &fetch, |take| {
        let mut take = take;
        workspace::restore(&manifest, &root, target, &mut take)
    })?;
    Ok(Restored {
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
    })
}

/// The pages of `head`, fetched in parallel and checked in order into the whole manifest.
fn fetch_manifest(
    routes: &ChunkRoutes<'_>,
    head: &ManifestHead,
    bytes_fetched: &AtomicU64,
) -> Result<TreeManifest> {
    let fetched: Vec<Mutex<Vec<u8>>> = head.pages.iter().map(|_| Mutex::default()).collect();
    let indexed: Vec<usize> = (0..head.pages.len()).collect();
    parallel::for_each(&indexed, TRANSFERS_IN_FLIGHT, |&i| {
        let page = head.pages[i];
        let bytes = routes.fetch(&page.sha256, u64::from(page.size))?;
        bytes_fetched.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        *fetched[i].lock().unwrap_or_else(|p| p.into_inner()) = bytes;
        Ok::<(), Error>(())
    })?;
    let pages: Vec<Vec<u8>> = fetched
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect();
    // The server enforced its limits; here only the rules matter.
    let unlimited = TreeLimits {
        max_total_size: u64::MAX,
        max_entries: u64::MAX,
        max_chunk_refs: u64::MAX,
    };
    let manifest = pages::assemble(head, pages.iter().map(Vec::as_slice), &unlimited)
        .map_err(WorkspaceError::from)?;
    Ok(manifest)
}
