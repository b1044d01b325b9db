//! A manifest in pages of bounded encoded size, and back.
//!
//! A tree of 100,000 files has a manifest of some 20 MB, and a Durable Object
//! row holds 2 MB: so a manifest travels and is stored as a [`ManifestHead`]
//! (small: the chunking, the root hash, the counts, and each page's sha256
//! and size) plus pages. A page is a JSON array of items, each an entry
//! (as in [`super::Entry`]) or, when one file's chunk list does not fit what
//! is left of a page, the rest of that list in the next page(s):
//!
//! ```json
//! [{"path":"big.bin","kind":"file","size":4294967296,"sha256":"…","chunks":[…]}]
//! [{"path":"big.bin","kind":"more_chunks","chunks":[…]},{"path":"c","kind":"dir"}]
//! ```
//!
//! A page's bytes are exactly what [`split`] produced and what the head's
//! sha256 names: [`PagesChecker`] verifies each page as it arrives, so a
//! server can check a manifest page by page without holding it whole.

use super::entry::{ItemKind, ItemWire};
use super::{ChunkParams, ChunkRef, ContentHash, Entry, EntryPath, FORMAT, Node};
use super::{TreeChecker, TreeLimits, TreeManifest, TreeSummary, invalid};
use crate::DomainError;
use serde::{Deserialize, Serialize};

/// The smallest page bound [`split`] accepts: room for any one entry's
/// fields (a 4 KiB path and a 4 KiB target, even in base64) and a chunk.
pub const MIN_PAGE_BYTES: usize = 64 * 1024;
/// The page bound to split with unless there is a reason not to: half a
/// Durable Object row, leaving room for the row's other columns.
pub const DEFAULT_PAGE_BYTES: usize = 1_000_000;
/// The largest page accepted.
pub const MAX_PAGE_BYTES: usize = 1_900_000;
/// The most pages a head may name (some 10 GB of manifest at most).
pub const MAX_PAGES: usize = 10_000;

/// One page as the head names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRef {
    /// The sha256 of the page's bytes.
    pub sha256: ContentHash,
    /// Its length in bytes.
    pub size: u32,
}

/// What stands for a paged manifest: small enough for any row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestHead {
    /// [`FORMAT`].
    pub format: u32,
    /// How the files were cut.
    pub chunking: ChunkParams,
    /// The tree's root hash ([`super::root_hash`]).
    pub root_hash: ContentHash,
    /// Entries of every kind.
    pub entries: u64,
    /// Bytes in all files.
    pub total_size: u64,
    /// The pages, in order.
    pub pages: Vec<PageRef>,
}

/// A page's bytes and their sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedPage {
    /// The sha256 of `bytes`.
    pub sha256: ContentHash,
    /// The page's JSON.
    pub bytes: Vec<u8>,
}

/// One item of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageItem {
    /// An entry (a file's chunk list may continue in the next items).
    Entry(Entry),
    /// More chunks of the file just before.
    MoreChunks {
        /// That file's path.
        path: EntryPath,
        /// The chunks that follow.
        chunks: Vec<ChunkRef>,
    },
}

/// Checks `manifest` and splits it into pages of at most `max_page_bytes`.
pub fn split(
    manifest: &TreeManifest,
    limits: &TreeLimits,
    max_page_bytes: usize,
) -> Result<(ManifestHead, Vec<EncodedPage>), DomainError> {
    if !(MIN_PAGE_BYTES..=MAX_PAGE_BYTES).contains(&max_page_bytes) {
        return Err(invalid(format!(
            "pages hold {MIN_PAGE_BYTES} to {MAX_PAGE_BYTES} bytes; asked for {max_page_bytes}"
        )));
    }
    let summary = manifest.check(limits)?;
    let mut pages = PageBuilder::new(max_page_bytes);
    for entry in &manifest.entries {
        pages.push_entry(entry)?;
    }
    let pages = pages.finish();
    let head = ManifestHead {
        format: FORMAT,
        chunking: manifest.chunking.clone(),
        root_hash: summary.root_hash,
        entries: summary.entries,
        total_size: summary.total_size,
        pages: pages
            .iter()
            .map(|page| PageRef {
                sha256: page.sha256,
                size: u32::try_from(page.bytes.len()).unwrap_or(u32::MAX),
            })
            .collect(),
    };
    Ok((head, pages))
}

/// Rebuilds the manifest `head` names from its pages' bytes, in order,
/// checking every page and the whole.
pub fn assemble<'a>(
    head: &ManifestHead,
    pages: impl IntoIterator<Item = &'a [u8]>,
    limits: &TreeLimits,
) -> Result<TreeManifest, DomainError> {
    let mut checker = PagesChecker::new(head, *limits)?;
    let mut entries: Vec<Entry> = Vec::new();
    for bytes in pages {
        for item in checker.page(bytes)? {
            match item {
                PageItem::Entry(entry) => entries.push(entry),
                PageItem::MoreChunks { chunks, .. } => {
                    // The checker placed it after its file.
                    if let Some(Node::File(file)) = entries.last_mut().map(|e| &mut e.node) {
                        file.chunks.extend(chunks);
                    }
                }
            }
        }
    }
    checker.finish()?;
    Ok(TreeManifest {
        format: head.format,
        chunking: head.chunking.clone(),
        entries,
    })
}

/// Checks a paged manifest one page at a time against its head.
pub struct PagesChecker<'h> {
    head: &'h ManifestHead,
    next: usize,
    tree: TreeChecker,
}

impl<'h> PagesChecker<'h> {
    /// Starts checking the pages `head` names.
    pub fn new(head: &'h ManifestHead, limits: TreeLimits) -> Result<Self, DomainError> {
        if head.format != FORMAT {
            return Err(invalid(format!(
                "manifest format {} is not the supported {FORMAT}",
                head.format
            )));
        }
        if head.pages.len() > MAX_PAGES {
            return Err(invalid(format!("a manifest has at most {MAX_PAGES} pages")));
        }
        let tree = TreeChecker::new(&head.chunking, limits)?;
        Ok(Self {
            head,
            next: 0,
            tree,
        })
    }

    /// Checks the next page's bytes and returns its items.
    pub fn page(&mut self, bytes: &[u8]) -> Result<Vec<PageItem>, DomainError> {
        let index = self.next;
        let Some(expected) = self.head.pages.get(index) else {
            return Err(invalid(format!("the head names only {index} pages")));
        };
        self.next += 1;
        let size_ok =
            bytes.len() <= MAX_PAGE_BYTES && u32::try_from(bytes.len()).ok() == Some(expected.size);
        if !size_ok || ContentHash::of(bytes) != expected.sha256 {
            return Err(invalid(format!(
                "page {index} is not the {} bytes with sha256 {} the head names",
                expected.size, expected.sha256
            )));
        }
        let wires: Vec<ItemWire> = serde_json::from_slice(bytes)
            .map_err(|err| invalid(format!("page {index} is not a manifest page: {err}")))?;
        if wires.is_empty() {
            return Err(invalid(format!("page {index} is empty")));
        }
        let mut items = Vec::with_capacity(wires.len());
        for wire in wires {
            let item = to_item(wire).map_err(|err| invalid(format!("page {index}: {err}")))?;
            match &item {
                PageItem::Entry(entry) => self.tree.entry(entry)?,
                PageItem::MoreChunks { path, chunks } => self.tree.more_chunks(path, chunks)?,
            }
            items.push(item);
        }
        Ok(items)
    }

    /// Ends the check: every page seen, and the counts and root hash the
    /// head gives are the tree's.
    pub fn finish(self) -> Result<TreeSummary, DomainError> {
        if self.next != self.head.pages.len() {
            return Err(invalid(format!(
                "{} of the head's {} pages were given",
                self.next,
                self.head.pages.len()
            )));
        }
        let summary = self.tree.finish()?;
        let head = self.head;
        if summary.entries != head.entries || summary.total_size != head.total_size {
            return Err(invalid(format!(
                "the pages hold {} entries of {} bytes; the head says {} of {}",
                summary.entries, summary.total_size, head.entries, head.total_size
            )));
        }
        if summary.root_hash != head.root_hash {
            return Err(invalid(format!(
                "the pages' root hash is {}; the head says {}",
                summary.root_hash, head.root_hash
            )));
        }
        Ok(summary)
    }
}

fn to_item(mut wire: ItemWire) -> Result<PageItem, String> {
    if wire.kind != ItemKind::MoreChunks {
        return Entry::try_from(wire).map(PageItem::Entry);
    }
    let path = wire.take_path()?;
    let chunks = wire
        .chunks
        .take()
        .ok_or("a more_chunks item names no chunks")?;
    Ok(PageItem::MoreChunks { path, chunks })
}

/// Pages filling up with items, cut where the entries say (content-defined)
/// rather than where a page fills: a page is closed after an entry whose
/// path hashes under a threshold once the page holds [`CUT_FILL`] of the
/// bound, so an entry added, removed or resized moves the cuts of its own
/// page only and a one-file edit re-sends about one page, not every page
/// after it. A page reaching the bound is still closed there (rare: pages
/// average about half the bound).
struct PageBuilder {
    max: usize,
    /// Bytes a page holds before an entry may end it.
    min_fill: usize,
    /// An entry of `n` bytes ends its page with odds `n / cut_span`.
    cut_span: u64,
    current: Vec<u8>,
    done: Vec<EncodedPage>,
}

/// The share of the bound (1/`CUT_FILL`) a page holds before an entry may
/// end it, and the mean extra bytes before one does.
const CUT_FILL: usize = 4;

impl PageBuilder {
    fn new(max: usize) -> Self {
        Self {
            max,
            min_fill: max / CUT_FILL,
            cut_span: u64::try_from(max / CUT_FILL).unwrap_or(u64::MAX).max(1),
            current: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Whether the entry at `path`, `len` bytes, ends its page: decided by
    /// the path's hash alone (and the page's fill), so it does not move
    /// when an earlier entry changes.
    fn cuts_after(&self, path: &EntryPath, len: usize) -> bool {
        if self.current.len() < self.min_fill {
            return false;
        }
        let digest = ContentHash::of(path.as_bytes());
        let mut low = [0u8; 8];
        low.copy_from_slice(&digest.as_raw()[..8]);
        let draw = u64::from_le_bytes(low) % self.cut_span;
        draw < u64::try_from(len).unwrap_or(u64::MAX)
    }

    /// Bytes an item may take in the current page: its `[` or `,` and the
    /// closing `]` counted.
    fn room(&self) -> usize {
        self.max.saturating_sub(self.current.len() + 2)
    }

    fn push_entry(&mut self, entry: &Entry) -> Result<(), DomainError> {
        let wire = ItemWire::from(entry.clone());
        let bytes = encode(&wire)?;
        if bytes.len() > self.room() && bytes.len() <= self.max.saturating_sub(2) {
            self.close_page();
        }
        if bytes.len() <= self.room() {
            self.push_item(&bytes);
            if self.cuts_after(&entry.path, bytes.len()) {
                self.close_page();
            }
            return Ok(());
        }
        // Only a file's chunk list can outgrow a page: cut it into parts,
        // the first in what is left of this page.
        let chunks = wire.chunks.clone().unwrap_or_default();
        let mut part = ItemWire {
            chunks: Some(Vec::new()),
            ..wire
        };
        let mut rest = chunks.as_slice();
        loop {
            let taken = self.fill(&mut part, rest)?;
            rest = &rest[taken..];
            if rest.is_empty() {
                return Ok(());
            }
            self.close_page();
            part = ItemWire {
                chunks: Some(Vec::new()),
                ..ItemWire::bare(&entry.path, ItemKind::MoreChunks)
            };
        }
    }

    /// Puts `part` with as many of `chunks` as fit into the current page;
    /// how many went in.
    fn fill(&mut self, part: &mut ItemWire, chunks: &[ChunkRef]) -> Result<usize, DomainError> {
        let mut size = encode(part)?.len();
        if size > self.room() && !self.current.is_empty() {
            self.close_page();
        }
        let mut taken = 0;
        for chunk in chunks {
            let more = encode(chunk)?.len() + usize::from(taken > 0);
            if size + more > self.room() {
                break;
            }
            size += more;
            taken += 1;
        }
        let progress = taken > 0 || part.kind != ItemKind::MoreChunks;
        if size > self.room() || !progress {
            return Err(DomainError::Storage(format!(
                "a page of {} bytes cannot hold the next part of a manifest",
                self.max
            )));
        }
        part.chunks = Some(chunks[..taken].to_vec());
        let bytes = encode(part)?;
        self.push_item(&bytes);
        Ok(taken)
    }

    fn push_item(&mut self, item: &[u8]) {
        self.current
            .push(if self.current.is_empty() { b'[' } else { b',' });
        self.current.extend_from_slice(item);
    }

    fn close_page(&mut self) {
        let mut bytes = std::mem::take(&mut self.current);
        bytes.push(b']');
        let sha256 = ContentHash::of(&bytes);
        self.done.push(EncodedPage { sha256, bytes });
    }

    fn finish(mut self) -> Vec<EncodedPage> {
        if !self.current.is_empty() {
            self.close_page();
        }
        self.done
    }
}

fn encode(value: &impl Serialize) -> Result<Vec<u8>, DomainError> {
    serde_json::to_vec(value).map_err(|err| DomainError::Storage(format!("encoding a page: {err}")))
}
