//! Tests of the workspace module over real temporary folders: scans of every kind of entry,
//! git's ignores in a real `git init` worktree, chunking that moves only what changed, the
//! index that spares unchanged files a read, reads repeated when a file changes under them,
//! and restores that round-trip byte for byte or fail leaving the target untouched.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod chunking;
mod consistent;
mod incremental;
mod restoring;
mod scanning;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use stasis_domain::workspace::ChunkRef;

use super::{Scan, ScanOptions, scan};

/// `len` bytes of xorshift noise: incompressible and the same for a seed.
pub(super) fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(len);
    out
}

pub(super) fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("mkdir");
    }
    std::fs::write(path, bytes).expect("write");
}

pub(super) fn set_executable(path: &Path) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

pub(super) fn scan_with(root: &Path, options: &ScanOptions) -> Scan {
    scan(root, options).expect("scan")
}

/// Paths in a scan's manifest, lossily as text.
pub(super) fn paths(scan: &Scan) -> Vec<String> {
    scan.manifest
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(e.path.as_bytes()).into_owned())
        .collect()
}

/// A fetcher that reads chunks back from a scan's files.
pub(super) fn fetch_from(scan: &Scan) -> impl FnMut(&ChunkRef) -> crate::Result<Vec<u8>> + '_ {
    |chunk| {
        scan.read_chunk(&chunk.sha256)
            .map_err(|e| crate::Error::Config(e.to_string()))
    }
}

/// Everything under `root` as (path, what it is), sorted: a file's bytes and owner-x bit, a
/// link's target, a folder.
pub(super) fn snapshot(root: &Path) -> Vec<(Vec<u8>, String)> {
    let mut out = Vec::new();
    visit(root, root, &mut out);
    out.sort();
    out
}

fn visit(root: &Path, dir: &Path, out: &mut Vec<(Vec<u8>, String)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        let rel = path
            .strip_prefix(root)
            .expect("under root")
            .as_os_str()
            .as_bytes()
            .to_vec();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("readlink");
            out.push((rel, format!("link {:?}", target.as_os_str().as_bytes())));
        } else if meta.is_dir() {
            out.push((rel, "dir".into()));
            visit(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            let exec = meta.permissions().mode() & 0o100 != 0;
            let digest = stasis_domain::workspace::ContentHash::of(&bytes);
            out.push((
                rel,
                format!("file exec={exec} len={} {digest}", bytes.len()),
            ));
        }
    }
}
