//! Restores: byte for byte with modes and links; never into a non-empty folder; a corrupt
//! chunk or a wrong root hash fails and leaves the target as it was, with no folder left over.

use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use stasis_domain::workspace::{ChunkRef, ContentHash};

use super::super::{RESTORE_SUFFIX, ScanOptions, WorkspaceError, restore};
use super::{fetch_from, noise, scan_with, set_executable, snapshot, write};

fn full_tree(root: &Path) {
    std::fs::create_dir_all(root.join("empty/deeper")).expect("mkdir");
    write(root, "bin/tool", b"#!/bin/sh\nexit 0\n");
    set_executable(&root.join("bin/tool"));
    write(root, "zero", b"");
    write(root, "data/big.bin", &noise(9, 5 << 20));
    write(root, "data/copy.bin", &noise(9, 5 << 20)); // the same chunks twice
    std::os::unix::fs::symlink("../missing/target", root.join("dangling")).expect("symlink");
    std::os::unix::fs::symlink("/etc/hostname", root.join("absolute")).expect("symlink");
    let odd = std::ffi::OsStr::from_bytes(b"na\xefve-\xff");
    std::fs::write(root.join(odd), b"odd name").expect("write");
    for n in 0..50 {
        write(root, &format!("many/{n}.txt"), format!("{n}").as_bytes());
    }
}

/// Entries of `dir` itself whose name ends with the restore suffix.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(RESTORE_SUFFIX))
        .collect()
}

#[test]
fn a_restore_round_trips_byte_for_byte_with_modes_and_links() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    full_tree(&source);
    let scan = scan_with(&source, &ScanOptions::default());
    let target = dir.path().join("restored/workspace");
    let stats = restore(
        &scan.manifest,
        &scan.summary.root_hash,
        &target,
        &mut fetch_from(&scan),
    )
    .expect("restore");
    assert_eq!(snapshot(&target), snapshot(&source));
    assert_eq!(stats.files, scan.summary.files);
    assert_eq!(stats.symlinks, 2);
    assert_eq!(stats.bytes, scan.summary.total_size);
    let again = scan_with(&target, &ScanOptions::default());
    assert_eq!(again.summary.root_hash, scan.summary.root_hash);
    assert!(leftovers(&dir.path().join("restored")).is_empty());
}

#[test]
fn a_restore_into_an_empty_folder_replaces_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    write(&source, "a.txt", b"a");
    let scan = scan_with(&source, &ScanOptions::default());
    let target = dir.path().join("target");
    std::fs::create_dir(&target).expect("mkdir");
    restore(
        &scan.manifest,
        &scan.summary.root_hash,
        &target,
        &mut fetch_from(&scan),
    )
    .expect("restore");
    assert_eq!(std::fs::read(target.join("a.txt")).expect("read"), b"a");
}

#[test]
fn a_restore_never_merges_into_a_non_empty_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    write(&source, "a.txt", b"new");
    let scan = scan_with(&source, &ScanOptions::default());
    let target = dir.path().join("target");
    write(&target, "keep.txt", b"mine");
    let err = restore(
        &scan.manifest,
        &scan.summary.root_hash,
        &target,
        &mut fetch_from(&scan),
    )
    .expect_err("refused");
    assert!(
        matches!(err, WorkspaceError::TargetNotEmpty { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not empty"), "{err}");
    assert_eq!(snapshot(&target).len(), 1);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_corrupt_chunk_fails_the_restore_and_leaves_the_target_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    full_tree(&source);
    let scan = scan_with(&source, &ScanOptions::default());
    let victim = scan.manifest.unique_chunks()[3];
    let mut honest = fetch_from(&scan);
    let mut corrupting = |chunk: &ChunkRef| {
        let mut bytes = honest(chunk)?;
        if chunk.sha256 == victim {
            bytes[0] ^= 1;
        }
        Ok(bytes)
    };
    let target = dir.path().join("target");
    let err = restore(
        &scan.manifest,
        &scan.summary.root_hash,
        &target,
        &mut corrupting,
    )
    .expect_err("corrupt");
    assert!(
        matches!(&err, WorkspaceError::Integrity { expected, .. } if *expected == victim),
        "{err}"
    );
    assert!(!target.exists());
    assert!(leftovers(dir.path()).is_empty());

    std::fs::create_dir(&target).expect("mkdir");
    let mut failing = |_: &ChunkRef| Err(crate::Error::Config("server gone".into()));
    let err = restore(
        &scan.manifest,
        &scan.summary.root_hash,
        &target,
        &mut failing,
    )
    .expect_err("fetch fails");
    assert!(matches!(err, WorkspaceError::Fetch { .. }), "{err}");
    assert!(snapshot(&target).is_empty());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_manifest_that_is_not_the_expected_tree_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    write(&source, "a.txt", b"a");
    let scan = scan_with(&source, &ScanOptions::default());
    let target = dir.path().join("target");
    let mut never = |_: &ChunkRef| -> crate::Result<Vec<u8>> { panic!("nothing is fetched") };
    let err = restore(
        &scan.manifest,
        &ContentHash::of(b"other"),
        &target,
        &mut never,
    )
    .expect_err("wrong root");
    assert!(matches!(err, WorkspaceError::Integrity { .. }), "{err}");
    assert!(!target.exists());
}

#[test]
fn a_chunk_read_after_its_file_changed_is_refused_not_misread() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "f.txt", b"before");
    let scan = scan_with(dir.path(), &ScanOptions::default());
    let hash = scan.manifest.unique_chunks()[0];
    assert_eq!(scan.read_chunk(&hash).expect("read"), b"before");
    write(dir.path(), "f.txt", b"after!");
    let err = scan.read_chunk(&hash).expect_err("changed");
    assert!(
        matches!(err, WorkspaceError::ChangedSinceScan { .. }),
        "{err}"
    );
    let unknown = scan
        .read_chunk(&ContentHash::of(b"x"))
        .expect_err("unknown");
    assert!(
        matches!(unknown, WorkspaceError::UnknownChunk(_)),
        "{unknown}"
    );
}
