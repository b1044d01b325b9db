//! The scan's `stat` of every file, made ahead on a few threads. A save of an unchanged tree of
//! 20,000 files spends most of its scan in `statx` (the kernel's path walk and inode reads), and
//! the kernel runs those side by side; what each stat finds is then used in order, exactly as
//! a stat made in the loop would be.

use std::fs::Metadata;
use std::path::Path;

use super::walk::{WalkedKind, absolute};

/// Threads at most.
const THREADS: usize = 4;
/// Fewer files than this are stat'ed in the caller's thread: threads cost more than they save.
const PARALLEL_FROM: usize = 2_000;

/// What a regular file's `lstat` answered; `None` for every other kind (not stat'ed here).
pub(super) type Stat = Option<std::io::Result<Metadata>>;

/// The stat of each of `entries` (in order), regular files only.
pub(super) fn stat_files(root: &Path, entries: &[(Vec<u8>, WalkedKind)]) -> Vec<Stat> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(THREADS);
    if threads < 2 || entries.len() < PARALLEL_FROM {
        return stat_part(root, entries);
    }
    let parts: Vec<&[(Vec<u8>, WalkedKind)]> =
        entries.chunks(entries.len().div_ceil(threads)).collect();
    std::thread::scope(|scope| {
        let running: Vec<_> = parts
            .iter()
            .map(|part| scope.spawn(move || stat_part(root, part)))
            .collect();
        parts
            .iter()
            .zip(running)
            // A part whose thread died is stat'ed again here: each stat is only a read.
            .flat_map(|(part, thread)| thread.join().unwrap_or_else(|_| stat_part(root, part)))
            .collect()
    })
}

fn stat_part(root: &Path, entries: &[(Vec<u8>, WalkedKind)]) -> Vec<Stat> {
    entries
        .iter()
        .map(|(rel, kind)| {
            (*kind == WalkedKind::File).then(|| std::fs::symlink_metadata(absolute(root, rel)))
        })
        .collect()
}
