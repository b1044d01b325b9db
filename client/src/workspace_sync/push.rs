//! The push: scan the folder (the index spares unchanged files a read), skip it all when the
//! tree's root hash is the one last synced, else split the manifest into pages, ask which chunks
//! and pages the store lacks (only those the last synced version did not name: [`super::held`]),
//! upload those in batches of many chunks (a few batches in flight,
//! each chunk read from its file when its batch is framed), and commit the head under `If-Match` of the last synced root hash (`If-None-Match:
//! *` for a first version). A 409 `chunks_missing` uploads what it names and commits again; a
//! 412 re-reads the current version (already ours: done) and commits once more against it.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::Serialize;
use stasis_domain::chunk_store::frames::{self, FRAME_HEADER};
use stasis_domain::workspace::pages::{
    self, DEFAULT_PAGE_BYTES, EncodedPage, MIN_PAGE_BYTES, ManifestHead,
};
use stasis_domain::workspace::{ContentHash, TreeLimits};

use super::PushOptions;
use super::batches::{self, BATCHES_IN_FLIGHT};
use super::chunks::ChunkRoutes;
use super::commit::{Committed, Precondition};
use super::held;
use super::synced::{Synced, agent_key};
use super::wire::{ManifestUpload, WorkspaceReceipt};
use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::AgentRef;
use crate::snapshot::parallel;
use crate::workspace::{self, Scan, WorkspaceError};

/// Scans tried when a file changes between its scan and its upload.
const SCAN_ROUNDS: usize = 3;
/// Commits tried before giving up on a server that keeps naming missing chunks.
const COMMIT_ROUNDS: usize = 4;
/// New names a push uploads without asking `missing` first, at most (and one batch's bytes):
/// a one-file edit's few chunks and pages.
const DIRECT_UPLOAD_NAMES: usize = 64;
/// A page holds at most this share of the tree's bytes (within the domain's page bounds): an
/// edit that keeps its entry's length re-sends only the page that holds it, so a one-file edit
/// moves about 0.5% of the tree in manifest bytes, not a whole 1 MB page of a 10 MB tree.
const PAGE_SHARE_OF_TREE: u64 = 200;

/// The page bound for a tree of `total_size` bytes: [`PAGE_SHARE_OF_TREE`], at least
/// [`MIN_PAGE_BYTES`], at most [`DEFAULT_PAGE_BYTES`].
pub fn page_bytes(total_size: u64) -> usize {
    let share = usize::try_from(total_size / PAGE_SHARE_OF_TREE).unwrap_or(usize::MAX);
    share.clamp(MIN_PAGE_BYTES, DEFAULT_PAGE_BYTES)
}

/// What a push did.
#[derive(Debug, Clone, Serialize)]
pub struct Pushed {
    /// The version stored; `None` when the tree was the one last synced (nothing sent).
    pub receipt: Option<WorkspaceReceipt>,
    /// The tree's root hash.
    pub root_hash: ContentHash,
    /// Entries of every kind.
    pub entries: u64,
    /// Regular files.
    pub files: u64,
    /// Bytes in all files.
    pub total_size: u64,
    /// What went over the wire.
    pub transfer: PushTransfer,
    /// What the scan read.
    pub scan: ScanCounts,
    /// The push's time, scan included.
    pub took_ms: u64,
}

impl Pushed {
    /// True when nothing was sent: the tree was the one last synced.
    pub fn skipped(&self) -> bool {
        self.receipt.is_none()
    }
}

/// Chunks and pages sent by a push.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PushTransfer {
    /// Distinct file chunks in the tree.
    pub chunks_total: u64,
    /// File chunks uploaded (one uploaded twice counts twice).
    pub chunks_sent: u64,
    /// Manifest pages.
    pub pages_total: u64,
    /// Pages uploaded.
    pub pages_sent: u64,
    /// Bytes of chunks and pages uploaded.
    pub bytes_sent: u64,
}

/// What the scan read and spared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ScanCounts {
    /// Files read (and chunked).
    pub files_read: u64,
    /// Files the index vouched for: not read.
    pub files_reused: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Reads repeated because a file changed while it was read.
    pub rereads: u64,
}

/// Pushes the folder `folder` as `agent`'s workspace.
pub fn push(
    client: &Client,
    agent: &AgentRef,
    folder: &Path,
    options: &PushOptions,
) -> Result<Pushed> {
    let started = Instant::now();
    let synced = options.state.load(agent);
    let mut scan_options = options.scan.clone();
    scan_options.index_path = Some(options.state.index_path());
    if let Some(synced) = &synced {
        scan_options.chunking = synced.chunking.clone();
    }
    let state_dir = options.state.path();
    std::fs::create_dir_all(state_dir)
        .map_err(|e| Error::io(format!("creating {}", state_dir.display()), e))?;
    let routes = ChunkRoutes {
        client,
        agent,
        deadline: options.deadline,
    };
    // The last synced version's names: the store held them, so `missing` is not asked about
    // them (the commit still checks every one).
    let known = synced
        .as_ref()
        .map(|s| held::load(&options.state, &s.root_hash))
        .unwrap_or_default();
    let mut round = 0;
    loop {
        round += 1;
        let scan = workspace::scan(folder, &scan_options)?;
        let mut pushed = Pushed {
            receipt: None,
            root_hash: scan.summary.root_hash,
            entries: scan.summary.entries,
            files: scan.summary.files,
            total_size: scan.summary.total_size,
            transfer: PushTransfer::default(),
            scan: ScanCounts {
                files_read: scan.stats.files_read,
                files_reused: scan.stats.files_reused,
                bytes_read: scan.stats.bytes_read,
                rereads: scan.stats.rereads,
            },
            took_ms: 0,
        };
        if synced.as_ref().map(|s| s.root_hash) == Some(scan.summary.root_hash) {
            pushed.took_ms = millis_since(started);
            return Ok(pushed);
        }
        let sending = Sending::new(&routes, &scan, options.event_watermark)?;
        match sending.run(synced.as_ref(), &known) {
            Err(error) if changed_since_scan(&error) && round < SCAN_ROUNDS => continue,
            Err(error) => return Err(error),
            Ok(receipt) => {
                held::forget(&options.state);
                options.state.save(&Synced {
                    agent: agent_key(agent),
                    root_hash: receipt.root_hash,
                    version: receipt.version,
                    chunking: scan.manifest.chunking.clone(),
                })?;
                // A cache: a push whose record is lost asks about every name next time.
                let _ = held::save(&options.state, &receipt.root_hash, sending.names());
                pushed.transfer = sending.transfer();
                pushed.receipt = Some(receipt);
                pushed.took_ms = millis_since(started);
                return Ok(pushed);
            }
        }
    }
}

fn millis_since(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A file changed after the scan read it: scanning again gives a tree that can be sent.
fn changed_since_scan(error: &Error) -> bool {
    matches!(error.root(), Error::Workspace(e) if matches!(**e, WorkspaceError::ChangedSinceScan { .. }))
}

/// One scan on its way to the server.
struct Sending<'a> {
    routes: &'a ChunkRoutes<'a>,
    scan: &'a Scan,
    head: ManifestHead,
    pages: HashMap<ContentHash, EncodedPage>,
    body: Vec<u8>,
    chunks_sent: AtomicU64,
    pages_sent: AtomicU64,
    bytes_sent: AtomicU64,
}

impl<'a> Sending<'a> {
    fn new(
        routes: &'a ChunkRoutes<'a>,
        scan: &'a Scan,
        event_watermark: Option<u64>,
    ) -> Result<Self> {
        let max_page = page_bytes(scan.summary.total_size);
        let (head, pages) = pages::split(&scan.manifest, &TreeLimits::default(), max_page)
            .map_err(WorkspaceError::from)?;
        let upload = ManifestUpload {
            head: &head,
            event_watermark,
        };
        let body = serde_json::to_vec(&upload).map_err(|e| Error::Protocol {
            what: format!("PUT {}", routes.agent.path("/workspace/manifest")),
            detail: format!("the manifest does not encode: {e}"),
        })?;
        let pages = pages.into_iter().map(|page| (page.sha256, page)).collect();
        Ok(Sending {
            routes,
            scan,
            head,
            pages,
            body,
            chunks_sent: AtomicU64::new(0),
            pages_sent: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
        })
    }

    /// Every distinct file chunk and page the version names.
    fn names(&self) -> Vec<ContentHash> {
        let mut names = self.scan.manifest.unique_chunks();
        let mut seen: HashSet<ContentHash> = names.iter().copied().collect();
        names.extend(
            self.head
                .pages
                .iter()
                .map(|p| p.sha256)
                .filter(|h| seen.insert(*h)),
        );
        names
    }

    /// Uploads what the store lacks and commits; the stored version. `known` (the last synced
    /// version's names) are not asked about: the commit names any the store lost.
    fn run(
        &self,
        synced: Option<&Synced>,
        known: &HashSet<ContentHash>,
    ) -> Result<WorkspaceReceipt> {
        let mut names = self.names();
        names.retain(|name| !known.contains(name));
        let mut to_send: Vec<ContentHash> = if self.fits_one_batch(&names) {
            // Sending them costs one request, as asking would: a one-file edit goes straight
            // to its upload (a name the store holds already is stored again, harmlessly).
            names
        } else {
            let missing = self.routes.missing(&names)?;
            names.retain(|name| missing.contains(name));
            names
        };
        let mut precondition = synced.map_or(Precondition::NoneYet, |s| {
            Precondition::IfMatch(s.root_hash)
        });
        let mut reread = false;
        for _ in 0..COMMIT_ROUNDS {
            self.upload(&to_send)?;
            to_send = Vec::new();
            match self.routes.commit(&self.body, precondition)? {
                Committed::Stored(receipt) => return self.checked(receipt),
                Committed::Missing(missing) => to_send = missing,
                Committed::Conflict(error) => {
                    let current = self.routes.current()?;
                    if let Some(current) = &current
                        && current.head.root_hash == self.head.root_hash
                    {
                        // Ours already (an earlier attempt's answer was lost).
                        return Ok(current.receipt());
                    }
                    if reread {
                        return Err(error);
                    }
                    reread = true;
                    precondition = current.map_or(Precondition::NoneYet, |c| {
                        Precondition::IfMatch(c.head.root_hash)
                    });
                }
            }
        }
        Err(Error::Protocol {
            what: format!("PUT {}", self.routes.agent.path("/workspace/manifest")),
            detail: format!("chunks still missing after {COMMIT_ROUNDS} uploads"),
        })
    }

    /// Whether `names` (all of them known here) fit one upload batch: then they are sent
    /// without asking `missing` first.
    fn fits_one_batch(&self, names: &[ContentHash]) -> bool {
        let framed: u64 = names
            .iter()
            .map(|hash| {
                let size = match self.pages.get(hash) {
                    Some(page) => page.bytes.len() as u64,
                    None => self
                        .scan
                        .chunks
                        .location(hash)
                        .map_or(u64::MAX / 2, |(_, _, size)| u64::from(size)),
                };
                size.saturating_add(FRAME_HEADER as u64)
            })
            .fold(0, u64::saturating_add);
        names.len() <= DIRECT_UPLOAD_NAMES && framed <= batches::BATCH_BYTES
    }

    /// Uploads chunks and pages in batches ([`batches::group`]), [`BATCHES_IN_FLIGHT`] at a
    /// time; a batch's chunks are read from their files as it is framed, so memory holds a few
    /// batches, never the tree.
    fn upload(&self, hashes: &[ContentHash]) -> Result<()> {
        let mut seen = HashSet::new();
        let mut sized = Vec::with_capacity(hashes.len());
        for hash in hashes.iter().filter(|h| seen.insert(**h)) {
            let size = match self.pages.get(hash) {
                Some(page) => page.bytes.len() as u64,
                None => match self.scan.chunks.location(hash) {
                    Some((_, _, size)) => u64::from(size),
                    None => {
                        return Err(Error::Protocol {
                            what: format!("PUT {}", self.routes.agent.path("/workspace/manifest")),
                            detail: format!("the server asks for {hash}, which the tree lacks"),
                        });
                    }
                },
            };
            sized.push((*hash, size));
        }
        let groups = batches::group(&sized);
        parallel::for_each(&groups, BATCHES_IN_FLIGHT, |batch| {
            let framed: u64 = batch
                .iter()
                .map(|(_, size)| size + FRAME_HEADER as u64)
                .sum();
            let mut body = Vec::with_capacity(usize::try_from(framed).unwrap_or(0));
            let (mut pages, mut chunks, mut bytes) = (0, 0, 0);
            for (hash, _) in batch {
                if let Some(page) = self.pages.get(hash) {
                    frames::encode_frame(&mut body, hash.as_raw(), &page.bytes);
                    pages += 1;
                    bytes += page.bytes.len() as u64;
                } else {
                    let chunk = self.scan.read_chunk(hash)?;
                    frames::encode_frame(&mut body, hash.as_raw(), &chunk);
                    chunks += 1;
                    bytes += chunk.len() as u64;
                }
            }
            self.routes.upload_batch(&body, batch.len() as u64, bytes)?;
            self.pages_sent.fetch_add(pages, Ordering::Relaxed);
            self.chunks_sent.fetch_add(chunks, Ordering::Relaxed);
            self.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
            Ok(())
        })
    }

    /// The receipt, once it names this tree.
    fn checked(&self, receipt: WorkspaceReceipt) -> Result<WorkspaceReceipt> {
        if receipt.root_hash != self.head.root_hash {
            return Err(Error::Protocol {
                what: format!("PUT {}", self.routes.agent.path("/workspace/manifest")),
                detail: format!(
                    "stored root hash {}, {} was sent",
                    receipt.root_hash, self.head.root_hash
                ),
            });
        }
        Ok(receipt)
    }

    fn transfer(&self) -> PushTransfer {
        PushTransfer {
            chunks_total: self.scan.chunks.len() as u64,
            chunks_sent: self.chunks_sent.load(Ordering::Relaxed),
            pages_total: self.head.pages.len() as u64,
            pages_sent: self.pages_sent.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
        }
    }
}
