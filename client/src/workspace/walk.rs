//! Listing a workspace folder: every entry, links as links (never followed), `.git`
//! included, minus what git ignores when the folder is in a git worktree (its `.gitignore`
//! files and `.git/info/exclude`; not the machine's global excludes, which another container
//! would not share), minus the caller's excludes, plus the caller's includes (which bring back
//! what git ignores, e.g. `node_modules/`).
//!
//! The walk is ripgrep's (`ignore` crate), which prunes ignored folders without entering them.
//! Includes need a second walk without git's rules, only when some are given.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, WalkBuilder};

use super::error::{WorkspaceError, WorkspaceResult};

/// What the walk found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkedKind {
    Dir,
    File,
    Symlink,
    /// A fifo, socket or device: skipped and counted.
    Special,
}

/// Every entry found, by path relative to the root, and what went missing meanwhile.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub entries: BTreeMap<Vec<u8>, WalkedKind>,
    /// Entries deleted between their listing and their reading.
    pub vanished: u64,
}

/// Which entries a walk keeps.
pub(crate) struct WalkRules {
    gitignore: bool,
    excludes: Gitignore,
    includes: Gitignore,
}

impl WalkRules {
    /// Rules for `root`: git's (when `gitignore`), and the patterns (gitignore syntax, relative
    /// to `root`).
    pub fn new(
        root: &Path,
        gitignore: bool,
        excludes: &[String],
        includes: &[String],
    ) -> WorkspaceResult<Self> {
        Ok(Self {
            gitignore,
            excludes: matcher(root, excludes)?,
            includes: matcher(root, includes)?,
        })
    }

    /// Lists `root`.
    pub fn list(&self, root: &Path) -> WorkspaceResult<Listing> {
        let mut listing = Listing::default();
        let mut main = self.builder(root);
        main.git_ignore(self.gitignore).git_exclude(self.gitignore);
        for found in main.build() {
            if let Some((rel, kind)) = accept(root, found, &mut listing)? {
                listing.entries.insert(rel, kind);
            }
        }
        if self.includes.is_empty() || !self.gitignore {
            return Ok(listing);
        }
        for found in self.builder(root).build() {
            let Some((rel, kind)) = accept(root, found, &mut listing)? else {
                continue;
            };
            let rel_path = Path::new(std::ffi::OsStr::from_bytes(&rel));
            let included = self
                .includes
                .matched_path_or_any_parents(rel_path, kind == WalkedKind::Dir)
                .is_ignore();
            if included && !listing.entries.contains_key(&rel) {
                for ancestor in rel_path.ancestors().skip(1) {
                    let bytes = ancestor.as_os_str().as_bytes();
                    if !bytes.is_empty() {
                        listing.entries.insert(bytes.to_vec(), WalkedKind::Dir);
                    }
                }
                listing.entries.insert(rel, kind);
            }
        }
        Ok(listing)
    }

    /// A walk of `root` with none of the walker's own filters, minus the excludes.
    fn builder(&self, root: &Path) -> WalkBuilder {
        let mut builder = WalkBuilder::new(root);
        builder
            .standard_filters(false)
            .hidden(false)
            .parents(true)
            .require_git(true)
            .follow_links(false);
        let excludes = self.excludes.clone();
        let root = root.to_owned();
        builder.filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let rel = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            !excludes.matched(rel, is_dir).is_ignore()
        });
        builder
    }
}

/// An entry the walker found, as `(relative path, kind)`; `None` for the root itself and for
/// what vanished.
fn accept(
    root: &Path,
    found: Result<DirEntry, ignore::Error>,
    listing: &mut Listing,
) -> WorkspaceResult<Option<(Vec<u8>, WalkedKind)>> {
    let entry = match found {
        Ok(entry) => entry,
        Err(err) => {
            if err.io_error().map(std::io::Error::kind) == Some(std::io::ErrorKind::NotFound) {
                listing.vanished += 1;
                return Ok(None);
            }
            let context = format!("listing the workspace {}", root.display());
            return Err(WorkspaceError::io(
                context,
                std::io::Error::other(err.to_string()),
            ));
        }
    };
    if entry.depth() == 0 {
        return Ok(None);
    }
    let rel = relative(root, entry.path());
    let kind = match entry.file_type() {
        Some(t) if t.is_symlink() => WalkedKind::Symlink,
        Some(t) if t.is_dir() => WalkedKind::Dir,
        Some(t) if t.is_file() => WalkedKind::File,
        _ => WalkedKind::Special,
    };
    Ok(Some((rel, kind)))
}

/// `path`'s bytes relative to `root`.
fn relative(root: &Path, path: &Path) -> Vec<u8> {
    path.strip_prefix(root)
        .map_or_else(|_| path.as_os_str(), Path::as_os_str)
        .as_bytes()
        .to_vec()
}

/// A gitignore-syntax matcher of `patterns`, rooted at `root`.
fn matcher(root: &Path, patterns: &[String]) -> WorkspaceResult<Gitignore> {
    let mut builder = GitignoreBuilder::new(root);
    for pattern in patterns {
        builder
            .add_line(None, pattern)
            .map_err(|err| WorkspaceError::Pattern {
                pattern: pattern.clone(),
                detail: err.to_string(),
            })?;
    }
    builder.build().map_err(|err| WorkspaceError::Pattern {
        pattern: patterns.join(", "),
        detail: err.to_string(),
    })
}

/// The absolute path of an entry.
pub(crate) fn absolute(root: &Path, rel: &[u8]) -> PathBuf {
    root.join(std::ffi::OsStr::from_bytes(rel))
}
