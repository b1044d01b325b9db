//! A workspace version's whole tree manifest.
//!
//! ```json
//! {"format":1,
//!  "chunking":{"algorithm":"fastcdc-v2020","min_size":16384,"avg_size":65536,"max_size":262144},
//!  "entries":[{"path":"a","kind":"dir"}, …]}
//! ```

use super::{ChunkParams, ContentHash, Entry, FORMAT, TreeChecker, TreeLimits, TreeSummary};
use super::{invalid, root_hash};
use crate::DomainError;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Every entry of a workspace, sorted by path, and how its files were cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeManifest {
    /// [`FORMAT`].
    pub format: u32,
    /// The chunking its files were cut with; the next version uses the same.
    pub chunking: ChunkParams,
    /// The entries, sorted by their path's bytes.
    pub entries: Vec<Entry>,
}

impl TreeManifest {
    /// A manifest of `entries` (sorted here) in the current format.
    pub fn new(chunking: ChunkParams, mut entries: Vec<Entry>) -> Self {
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Self {
            format: FORMAT,
            chunking,
            entries,
        }
    }

    /// Refuses a manifest that breaks the rules (see [`TreeChecker`]) or an
    /// unknown format; what it holds, with its root hash, otherwise.
    pub fn check(&self, limits: &TreeLimits) -> Result<TreeSummary, DomainError> {
        if self.format != FORMAT {
            return Err(invalid(format!(
                "manifest format {} is not the supported {FORMAT}",
                self.format
            )));
        }
        let mut checker = TreeChecker::new(&self.chunking, *limits)?;
        for entry in &self.entries {
            checker.entry(entry)?;
        }
        checker.finish()
    }

    /// The tree's root hash ([`root_hash`]), over the entries in their order.
    pub fn root_hash(&self) -> ContentHash {
        root_hash::root_hash(&self.entries)
    }

    /// Bytes in all files.
    pub fn total_size(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(Entry::as_file)
            .map(|file| file.size)
            .fold(0, u64::saturating_add)
    }

    /// Every chunk the manifest names, once, in order of first mention.
    pub fn unique_chunks(&self) -> Vec<ContentHash> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter_map(Entry::as_file)
            .flat_map(|file| file.chunks.iter().map(|chunk| chunk.sha256))
            .filter(|hash| seen.insert(*hash))
            .collect()
    }
}
