//! The local index: an unchanged file is not read again; a changed one is; an index made with
//! other chunking is discarded.

use stasis_domain::workspace::ChunkParams;

use super::super::ScanOptions;
use super::{scan_with, write};

fn options(index: &std::path::Path) -> ScanOptions {
    ScanOptions {
        index_path: Some(index.to_owned()),
        ..ScanOptions::default()
    }
}

#[test]
fn unchanged_files_are_not_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    for n in 0..200 {
        write(
            &tree,
            &format!("src/{n}.txt"),
            format!("content {n}\n").as_bytes(),
        );
    }
    let index = dir.path().join("workspace.index");
    let first = scan_with(&tree, &options(&index));
    assert_eq!((first.stats.files_read, first.stats.files_reused), (200, 0));
    assert!(index.exists());
    // The index is replaced by a rename when it is written: a new inode.
    let inode = || std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&index).expect("index"));
    let written = inode();

    let second = scan_with(&tree, &options(&index));
    assert_eq!(
        (second.stats.files_read, second.stats.files_reused),
        (0, 200)
    );
    assert_eq!(second.stats.bytes_read, 0);
    assert_eq!(second.manifest, first.manifest);
    assert_eq!(
        inode(),
        written,
        "nothing read: the index is not written again"
    );
    // What a push reads comes from the files the index vouched for.
    let hash = second.manifest.unique_chunks()[0];
    assert!(second.read_chunk(&hash).is_ok());

    // Same size, other bytes: the stamp moved, so the file is read.
    write(&tree, "src/7.txt", b"CONTENT 7\n");
    let third = scan_with(&tree, &options(&index));
    assert_eq!((third.stats.files_read, third.stats.files_reused), (1, 199));
    assert_ne!(third.summary.root_hash, first.summary.root_hash);
    assert_ne!(inode(), written, "a file read: the index is written");
    let written = inode();

    std::fs::remove_file(tree.join("src/8.txt")).expect("rm");
    let fourth = scan_with(&tree, &options(&index));
    assert_eq!(
        (fourth.stats.files_read, fourth.stats.files_reused),
        (0, 199)
    );
    assert_eq!(fourth.summary.files, 199);
    assert_ne!(inode(), written, "a file gone: the index is written");
}

#[test]
fn an_index_made_with_other_chunking_or_unreadable_is_discarded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("tree");
    write(&tree, "a.txt", b"a");
    write(&tree, "b.txt", b"b");
    let index = dir.path().join("workspace.index");
    scan_with(&tree, &options(&index));

    let mut other = options(&index);
    other.chunking = ChunkParams {
        min_size: 8 * 1024,
        ..ChunkParams::default()
    };
    let rescanned = scan_with(&tree, &other);
    assert_eq!(rescanned.stats.files_read, 2);
    assert!(rescanned.stats.index_discarded.is_some());

    std::fs::write(&index, b"{not json").expect("corrupt");
    let rescanned = scan_with(&tree, &options(&index));
    assert_eq!(rescanned.stats.files_read, 2);
    assert!(rescanned.stats.index_discarded.is_some());
    // And the scan wrote a good one again.
    assert_eq!(scan_with(&tree, &options(&index)).stats.files_read, 0);

    // One cut short (a crash's torn write) is discarded too, never half used.
    let whole = std::fs::read(&index).expect("index");
    std::fs::write(&index, &whole[..whole.len() - 7]).expect("cut");
    let rescanned = scan_with(&tree, &options(&index));
    assert_eq!(rescanned.stats.files_read, 2);
    assert!(rescanned.stats.index_discarded.is_some());
}

#[test]
fn an_index_kept_inside_the_folder_is_not_part_of_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "a.txt", b"a");
    write(dir.path(), ".stasis/keep", b"");
    let index = dir.path().join(".stasis/workspace.index");
    let first = scan_with(dir.path(), &options(&index));
    let second = scan_with(dir.path(), &options(&index));
    assert!(index.exists());
    assert_eq!(super::paths(&second), [".stasis", ".stasis/keep", "a.txt"]);
    assert_eq!(second.summary.root_hash, first.summary.root_hash);
    assert_eq!(second.stats.files_read, 0);
}
