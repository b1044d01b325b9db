//! The root hash: a tree's identity, one sha256 over its sorted entries.
//!
//! It is the sha256 of these bytes (integers big-endian):
//!
//! ```text
//! "stasis-workspace-tree-v1\n"          the domain, 25 bytes
//! then for every entry, in manifest order (by path bytes):
//!   u32 path length, the path's bytes
//!   one kind byte: 1 directory, 2 regular file, 3 symlink
//!   a directory:  nothing more
//!   a file:       u8 executable (0 or 1), u64 size, the 32 raw bytes of its sha256
//!   a symlink:    u32 target length, the target's bytes
//! ```
//!
//! Every field is fixed-size or length-prefixed, so two different trees
//! never encode to the same bytes. The chunk lists and the chunking
//! parameters are left out on purpose: they say how a file was cut, not what
//! it holds (its sha256 says that, and a restore checks every file's bytes
//! against it), so the same tree has the same root hash whatever it was cut
//! with, and an unchanged tree is recognisable as such.

use super::{ContentHash, ContentHasher, Entry, Node};

/// The bytes every root hash starts with.
pub const DOMAIN: &[u8] = b"stasis-workspace-tree-v1\n";

/// A root hash fed one entry at a time, in manifest order.
#[derive(Clone)]
pub struct RootHasher(ContentHasher);

impl Default for RootHasher {
    fn default() -> Self {
        let mut hasher = ContentHasher::default();
        hasher.update(DOMAIN);
        Self(hasher)
    }
}

impl RootHasher {
    /// Adds the next entry.
    pub fn add(&mut self, entry: &Entry) {
        self.add_bytes(entry.path.as_bytes());
        match &entry.node {
            Node::Dir => self.0.update(&[1]),
            Node::File(file) => {
                self.0.update(&[2, u8::from(file.executable)]);
                self.0.update(&file.size.to_be_bytes());
                self.0.update(file.sha256.as_raw());
            }
            Node::Symlink { target } => {
                self.0.update(&[3]);
                self.add_bytes(target);
            }
        }
    }

    /// The root hash of the entries added.
    pub fn finish(self) -> ContentHash {
        self.0.finish()
    }

    fn add_bytes(&mut self, bytes: &[u8]) {
        // A checked manifest's paths and targets are at most 4,096 bytes, so
        // the length always fits.
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        self.0.update(&len.to_be_bytes());
        self.0.update(bytes);
    }
}

/// The root hash of `entries`, taken in the order given.
pub fn root_hash<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> ContentHash {
    let mut hasher = RootHasher::default();
    for entry in entries {
        hasher.add(entry);
    }
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_root_hash_is_the_documented_encoding() {
        let content = ContentHash::of(b"hi");
        let entries = [
            Entry::dir("d"),
            Entry::file("d/f", true, 2, content, vec![(content, 2)]),
            Entry::symlink("l", "d/f"),
        ];
        let mut bytes = DOMAIN.to_vec();
        bytes.extend_from_slice(&[0, 0, 0, 1, b'd', 1]);
        bytes.extend_from_slice(&[0, 0, 0, 3, b'd', b'/', b'f', 2, 1]);
        bytes.extend_from_slice(&2u64.to_be_bytes());
        bytes.extend_from_slice(content.as_raw());
        bytes.extend_from_slice(&[0, 0, 0, 1, b'l', 3, 0, 0, 0, 3, b'd', b'/', b'f']);
        let expected = ContentHash::from_raw(Sha256::digest(&bytes).into());
        assert_eq!(root_hash(&entries), expected);
    }

    #[test]
    fn the_root_hash_ignores_how_files_were_cut_but_not_what_they_hold() {
        let content = ContentHash::of(b"hello");
        let (a, b) = (ContentHash::of(b"hel"), ContentHash::of(b"lo"));
        let whole = [Entry::file("f", false, 5, content, vec![(content, 5)])];
        let cut = [Entry::file("f", false, 5, content, vec![(a, 3), (b, 2)])];
        assert_eq!(root_hash(&whole), root_hash(&cut));
        let exec = [Entry::file("f", true, 5, content, vec![(content, 5)])];
        assert_ne!(root_hash(&whole), root_hash(&exec));
        assert_ne!(
            root_hash(&[Entry::dir("f")]),
            root_hash(&[Entry::symlink("f", "")])
        );
    }
}
