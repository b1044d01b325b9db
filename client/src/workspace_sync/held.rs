//! The names (file chunks and manifest pages) of the version last synced from here, kept beside
//! [`super::synced`]'s record: the store held them when that version was committed or read, so
//! the next push asks `missing` only about the others. A one-file edit of a tree of 20,000
//! files then asks about a few names, not 20,000.
//!
//! A cache, never trusted for correctness: the commit checks that the store holds every name
//! the manifest makes (409 `chunks_missing`, and the push uploads what it names), so a name
//! collected meanwhile (another machine's versions superseded this one) costs one more round,
//! not a broken version. The file records the root hash it belongs to and is used only while
//! that is the last synced one; a missing, short or stale file means "ask about every name".

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;

use stasis_domain::workspace::ContentHash;

use super::synced::StateDir;
use crate::atomic_write::AtomicFile;
use crate::error::{Error, Result};

/// The file's name in the state folder.
const HELD_FILE: &str = "held";
/// Its first bytes: the format.
const MAGIC: &[u8] = b"stasis-workspace-held 1\n";

fn held_path(state: &StateDir) -> PathBuf {
    state.path().join(HELD_FILE)
}

/// The names recorded for the version whose root hash is `root`; empty when the file is absent,
/// unreadable or another version's.
pub fn load(state: &StateDir, root: &ContentHash) -> HashSet<ContentHash> {
    let Ok(bytes) = std::fs::read(held_path(state)) else {
        return HashSet::new();
    };
    let Some(rest) = bytes.strip_prefix(MAGIC) else {
        return HashSet::new();
    };
    let (recorded_root, names) = rest.split_at(rest.len().min(32));
    if recorded_root != root.as_raw().as_slice() || names.len() % 32 != 0 {
        return HashSet::new();
    }
    names
        .chunks_exact(32)
        .filter_map(|raw| <[u8; 32]>::try_from(raw).ok())
        .map(ContentHash::from_raw)
        .collect()
}

/// Records `names` as held for the version whose root hash is `root` (atomically: the old file
/// or the new, never a part).
pub fn save(
    state: &StateDir,
    root: &ContentHash,
    names: impl IntoIterator<Item = ContentHash>,
) -> Result<()> {
    let path = held_path(state);
    let mut bytes = MAGIC.to_vec();
    bytes.extend_from_slice(root.as_raw());
    for name in names {
        bytes.extend_from_slice(name.as_raw());
    }
    let mut file = AtomicFile::create(&path)?;
    file.file()
        .write_all(&bytes)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    file.commit()
}

/// Forgets the record (the synced version changes without one).
pub fn forget(state: &StateDir) {
    let _ = std::fs::remove_file(held_path(state));
}
