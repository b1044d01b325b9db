//! One entry of a tree manifest, and its JSON form.
//!
//! ```json
//! {"path":"bin/run","kind":"file","executable":true,"size":6,"sha256":"…","chunks":[{"sha256":"…","size":6}]}
//! {"path":"docs","kind":"dir"}
//! {"path":"latest","kind":"symlink","target":"../missing"}
//! {"path_b64":"Y2Fm6Q==","kind":"file","size":0,"sha256":"e3b0…","chunks":[]}
//! ```
//!
//! `executable` is left out when false. Names that are not UTF-8 travel as
//! base64 (see [`super::EntryPath`]).

use super::path::{from_wire, to_wire};
use super::{ContentHash, EntryPath};
use serde::{Deserialize, Serialize};

/// One content-defined chunk of a file: its sha256 and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChunkRef {
    /// The sha256 of the chunk's bytes: its name in the chunk store.
    pub sha256: ContentHash,
    /// Its length in bytes.
    pub size: u32,
}

/// A regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileNode {
    /// The owner's executable bit (what git keeps of a file's mode).
    pub executable: bool,
    /// Bytes; the sum of the chunks' sizes.
    pub size: u64,
    /// The sha256 of the whole file.
    pub sha256: ContentHash,
    /// The file's chunks, in order; none for an empty file.
    pub chunks: Vec<ChunkRef>,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory (listed even when it holds entries, so empty ones are kept
    /// and every entry's parent is listed before it).
    Dir,
    /// A regular file.
    File(FileNode),
    /// A symbolic link with its target's bytes, never followed.
    Symlink {
        /// The target as the link holds it (relative, absolute, or dangling).
        target: Vec<u8>,
    },
}

/// One entry of a tree manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ItemWire", into = "ItemWire")]
pub struct Entry {
    /// Where it is, relative to the workspace folder.
    pub path: EntryPath,
    /// What it is.
    pub node: Node,
}

impl Entry {
    /// A directory.
    pub fn dir(path: impl Into<Vec<u8>>) -> Self {
        Self {
            path: EntryPath::new(path),
            node: Node::Dir,
        }
    }

    /// A regular file of `(sha256, size)` chunks.
    pub fn file(
        path: impl Into<Vec<u8>>,
        executable: bool,
        size: u64,
        sha256: ContentHash,
        chunks: Vec<(ContentHash, u32)>,
    ) -> Self {
        let chunks = chunks
            .into_iter()
            .map(|(sha256, size)| ChunkRef { sha256, size })
            .collect();
        Self {
            path: EntryPath::new(path),
            node: Node::File(FileNode {
                executable,
                size,
                sha256,
                chunks,
            }),
        }
    }

    /// A symbolic link to `target`.
    pub fn symlink(path: impl Into<Vec<u8>>, target: impl Into<Vec<u8>>) -> Self {
        Self {
            path: EntryPath::new(path),
            node: Node::Symlink {
                target: target.into(),
            },
        }
    }

    /// The file's details, when this is a regular file.
    pub fn as_file(&self) -> Option<&FileNode> {
        match &self.node {
            Node::File(file) => Some(file),
            _ => None,
        }
    }
}

/// The kinds of JSON item: an entry's, or (in a page only) the rest of the
/// chunk list of the file before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ItemKind {
    Dir,
    File,
    Symlink,
    MoreChunks,
}

/// The JSON object of an entry or of a page's continuation item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ItemWire {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_b64: Option<String>,
    pub kind: ItemKind,
    #[serde(default, skip_serializing_if = "is_false")]
    pub executable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<ContentHash>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<ChunkRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_b64: Option<String>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl ItemWire {
    /// An item of `kind` at `path`, every other field empty.
    pub fn bare(path: &EntryPath, kind: ItemKind) -> Self {
        let (path, path_b64) = to_wire(path.as_bytes());
        Self {
            path,
            path_b64,
            kind,
            executable: false,
            size: None,
            sha256: None,
            chunks: None,
            target: None,
            target_b64: None,
        }
    }

    /// The item's path.
    pub fn take_path(&mut self) -> Result<EntryPath, String> {
        from_wire("path", self.path.take(), self.path_b64.take()).map(EntryPath::new)
    }
}

impl From<Entry> for ItemWire {
    fn from(entry: Entry) -> Self {
        match entry.node {
            Node::Dir => Self::bare(&entry.path, ItemKind::Dir),
            Node::File(file) => Self {
                executable: file.executable,
                size: Some(file.size),
                sha256: Some(file.sha256),
                chunks: Some(file.chunks),
                ..Self::bare(&entry.path, ItemKind::File)
            },
            Node::Symlink { target } => {
                let (target, target_b64) = to_wire(&target);
                Self {
                    target,
                    target_b64,
                    ..Self::bare(&entry.path, ItemKind::Symlink)
                }
            }
        }
    }
}

impl TryFrom<ItemWire> for Entry {
    type Error = String;

    fn try_from(mut wire: ItemWire) -> Result<Self, String> {
        let path = wire.take_path()?;
        let node = match wire.kind {
            ItemKind::Dir => Node::Dir,
            ItemKind::File => Node::File(FileNode {
                executable: wire.executable,
                size: wire.size.ok_or("a file's size is missing")?,
                sha256: wire.sha256.ok_or("a file's sha256 is missing")?,
                chunks: wire.chunks.unwrap_or_default(),
            }),
            ItemKind::Symlink => Node::Symlink {
                target: from_wire("target", wire.target, wire.target_b64)?,
            },
            ItemKind::MoreChunks => {
                return Err("more_chunks items belong in manifest pages only".into());
            }
        };
        Ok(Self { path, node })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(entry: &Entry) -> String {
        let json = serde_json::to_string(entry).expect("encode");
        let back: Entry = serde_json::from_str(&json).expect("decode");
        assert_eq!(&back, entry);
        json
    }

    #[test]
    fn every_kind_round_trips_through_json() {
        let empty = ContentHash::of(b"");
        assert_eq!(
            round_trip(&Entry::dir("docs")),
            r#"{"path":"docs","kind":"dir"}"#
        );
        assert_eq!(
            round_trip(&Entry::symlink("l", "../missing")),
            r#"{"path":"l","kind":"symlink","target":"../missing"}"#
        );
        let file = round_trip(&Entry::file(b"caf\xe9".to_vec(), false, 0, empty, vec![]));
        assert_eq!(
            file,
            format!(
                r#"{{"path_b64":"Y2Fm6Q==","kind":"file","size":0,"sha256":"{empty}","chunks":[]}}"#
            )
        );
        let exec = Entry::file(
            "run",
            true,
            6,
            ContentHash::of(b"hello\n"),
            vec![(empty, 6)],
        );
        assert!(round_trip(&exec).contains(r#""executable":true"#));
        round_trip(&Entry::symlink("odd", b"\xff\xfe".to_vec()));
    }

    #[test]
    fn malformed_items_are_refused() {
        for bad in [
            r#"{"kind":"dir"}"#,
            r#"{"path":"a","kind":"file"}"#,
            r#"{"path":"a","kind":"symlink"}"#,
            r#"{"path":"a","kind":"more_chunks","chunks":[]}"#,
            r#"{"path":"a","kind":"socket"}"#,
            r#"{"path":"a","kind":"file","size":1,"sha256":"zz"}"#,
        ] {
            assert!(serde_json::from_str::<Entry>(bad).is_err(), "{bad}");
        }
    }
}
