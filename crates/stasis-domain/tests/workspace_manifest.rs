//! Workspace tree manifests: the rules a manifest from outside must follow
//! (each refused with its code, nothing else refused), and pages: any
//! manifest, even one file whose chunk list outgrows a page, splits into
//! pages under the bound and comes back whole; a page altered, dropped or
//! swapped is refused; the cuts between pages follow the entries, so a
//! one-file change re-sends about one page.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

use stasis_domain::workspace::{
    ChunkParams, ContentHash, Entry, FORMAT, TreeLimits, TreeManifest,
    pages::{self, DEFAULT_PAGE_BYTES, MIN_PAGE_BYTES, PageItem, PagesChecker},
};

fn chunk(seed: u64) -> (ContentHash, u32) {
    (ContentHash::of(&seed.to_be_bytes()), 1000)
}

/// A file of `count` chunks of 1,000 bytes (hashes made up; the rules do
/// not see bytes).
fn file(path: &str, count: u64) -> Entry {
    let chunks: Vec<_> = (0..count).map(chunk).collect();
    let sha = if count == 1 {
        chunks[0].0
    } else {
        ContentHash::of(path.as_bytes())
    };
    let sha = if count == 0 {
        ContentHash::of(b"")
    } else {
        sha
    };
    Entry::file(path, false, count * 1000, sha, chunks)
}

fn manifest(entries: Vec<Entry>) -> TreeManifest {
    TreeManifest::new(ChunkParams::default(), entries)
}

fn code_of(manifest: &TreeManifest, limits: &TreeLimits) -> String {
    manifest
        .check(limits)
        .map_or_else(|err| err.code().to_owned(), |_| "ok".to_owned())
}

fn code(manifest: &TreeManifest) -> String {
    code_of(manifest, &TreeLimits::default())
}

/// Keeps the entries' order as given (`new` sorts).
fn unsorted(entries: Vec<Entry>) -> TreeManifest {
    TreeManifest {
        format: FORMAT,
        chunking: ChunkParams::default(),
        entries,
    }
}

#[test]
fn a_tree_of_every_kind_of_entry_is_valid() {
    let tree = manifest(vec![
        Entry::dir("empty"),
        Entry::dir("src"),
        file("src/0-bytes", 0),
        file("src/one", 1),
        file("src/many", 5),
        Entry::file(
            b"src/caf\xe9".to_vec(),
            true,
            1000,
            chunk(0).0,
            vec![chunk(0)],
        ),
        Entry::symlink("dangling", "../nowhere"),
        Entry::dir(".git"),
        file(".git/HEAD", 1),
    ]);
    let summary = tree.check(&TreeLimits::default()).expect("valid");
    assert_eq!((summary.files, summary.dirs, summary.symlinks), (5, 3, 1));
    assert_eq!(summary.total_size, 8000);
    assert_eq!(summary.chunk_refs, 8);
    assert_eq!(summary.root_hash, tree.root_hash());
    assert_eq!(tree.unique_chunks().len(), 5);
}

#[test]
fn paths_must_be_sorted_unique_relative_and_plain() {
    assert_eq!(
        code(&unsorted(vec![file("b", 1), file("a", 1)])),
        "invalid_workspace_manifest"
    );
    assert_eq!(
        code(&unsorted(vec![file("a", 1), file("a", 1)])),
        "invalid_workspace_manifest"
    );
    for bad in ["/abs", "a/../b", "..", "a//b", "", "./a"] {
        assert_eq!(
            code(&manifest(vec![file(bad, 1)])),
            "invalid_workspace_manifest",
            "{bad}"
        );
    }
}

#[test]
fn nothing_lies_under_a_file_a_symlink_or_an_unlisted_folder() {
    let under_file = manifest(vec![file("a", 1), file("a/b", 1)]);
    assert_eq!(code(&under_file), "invalid_workspace_manifest");
    let under_link = manifest(vec![Entry::symlink("a", "/tmp"), file("a/b", 1)]);
    assert_eq!(code(&under_link), "invalid_workspace_manifest");
    let orphan = manifest(vec![file("a/b", 1)]);
    assert_eq!(code(&orphan), "invalid_workspace_manifest");
    // "a.b" sorts between "a" and "a/x": the folder is still known.
    let ok = manifest(vec![Entry::dir("a"), file("a.b", 1), file("a/x", 1)]);
    assert_eq!(code(&ok), "ok");
}

#[test]
fn a_files_size_is_the_sum_of_its_chunks() {
    let mut wrong = file("f", 3);
    if let stasis_domain::workspace::Node::File(f) = &mut wrong.node {
        f.size += 1;
    }
    assert_eq!(code(&manifest(vec![wrong])), "invalid_workspace_manifest");
    let empty_with_other_hash = Entry::file("e", false, 0, ContentHash::of(b"x"), vec![]);
    assert_eq!(
        code(&manifest(vec![empty_with_other_hash])),
        "invalid_workspace_manifest"
    );
    let one_chunk_other_hash = Entry::file("o", false, 1000, ContentHash::of(b"x"), vec![chunk(1)]);
    assert_eq!(
        code(&manifest(vec![one_chunk_other_hash])),
        "invalid_workspace_manifest"
    );
    let oversized = Entry::file(
        "big",
        false,
        300_000,
        ContentHash::of(b"x"),
        vec![(chunk(1).0, 300_000)],
    );
    assert_eq!(
        code(&manifest(vec![oversized])),
        "invalid_workspace_manifest"
    );
    let empty_link = Entry::symlink("l", "");
    assert_eq!(
        code(&manifest(vec![empty_link])),
        "invalid_workspace_manifest"
    );
}

#[test]
fn limits_answer_too_large() {
    let tree = manifest(vec![file("a", 3), file("b", 3)]);
    let limits = TreeLimits {
        max_total_size: 5999,
        ..TreeLimits::default()
    };
    assert_eq!(code_of(&tree, &limits), "workspace_too_large");
    let limits = TreeLimits {
        max_entries: 1,
        ..TreeLimits::default()
    };
    assert_eq!(code_of(&tree, &limits), "workspace_too_large");
    let limits = TreeLimits {
        max_chunk_refs: 5,
        ..TreeLimits::default()
    };
    assert_eq!(code_of(&tree, &limits), "workspace_too_large");
    let mut bad_params = tree.clone();
    bad_params.chunking.max_size = 1;
    assert_eq!(code(&bad_params), "invalid_workspace_manifest");
    let mut future = tree;
    future.format = FORMAT + 1;
    assert_eq!(code(&future), "invalid_workspace_manifest");
}

#[test]
fn a_manifest_round_trips_through_json() {
    let tree = manifest(vec![
        Entry::dir("d"),
        file("d/f", 2),
        Entry::symlink(b"l\xff".to_vec(), "d"),
    ]);
    let json = serde_json::to_string(&tree).expect("encode");
    assert!(json.starts_with(r#"{"format":1,"chunking":{"algorithm":"fastcdc-v2020","min_size":16384,"avg_size":65536,"max_size":262144},"entries":["#));
    let back: TreeManifest = serde_json::from_str(&json).expect("decode");
    assert_eq!(back, tree);
}

fn big_tree(files: u64) -> TreeManifest {
    let mut entries = vec![Entry::dir("src")];
    entries.extend((0..files).map(|n| file(&format!("src/file-{n:06}.rs"), 1)));
    manifest(entries)
}

#[test]
fn a_hundred_thousand_files_split_into_pages_under_the_bound_and_back() {
    let tree = big_tree(100_000);
    let limits = TreeLimits::default();
    let (head, pages) = pages::split(&tree, &limits, DEFAULT_PAGE_BYTES).expect("split");
    assert!(pages.len() > 10, "{} pages", pages.len());
    assert!(pages.iter().all(|p| p.bytes.len() <= DEFAULT_PAGE_BYTES));
    assert_eq!(head.entries, 100_001);
    assert_eq!(head.root_hash, tree.root_hash());
    let head_json = serde_json::to_vec(&head).expect("encode head");
    assert!(
        head_json.len() < 10_000,
        "the head is {} bytes",
        head_json.len()
    );
    let back = pages::assemble(&head, pages.iter().map(|p| p.bytes.as_slice()), &limits)
        .expect("assemble");
    assert_eq!(back, tree);
}

#[test]
fn one_file_with_more_chunks_than_a_page_holds_continues_on_the_next_pages() {
    let tree = manifest(vec![file("a", 1), file("huge", 3000), file("z", 1)]);
    let limits = TreeLimits::default();
    let (head, pages) = pages::split(&tree, &limits, MIN_PAGE_BYTES).expect("split");
    assert!(pages.len() >= 4, "{} pages", pages.len());
    assert!(pages.iter().all(|p| p.bytes.len() <= MIN_PAGE_BYTES));
    let mut checker = PagesChecker::new(&head, limits).expect("head");
    let second = checker.page(&pages[1].bytes).err();
    assert!(second.is_some(), "pages are taken in order");
    let mut checker = PagesChecker::new(&head, limits).expect("head");
    let first = checker.page(&pages[0].bytes).expect("page 0");
    assert!(matches!(first.last(), Some(PageItem::Entry(e)) if e.path.as_bytes() == b"huge"));
    let next = checker.page(&pages[1].bytes).expect("page 1");
    assert!(matches!(&next[0], PageItem::MoreChunks { path, .. } if path.as_bytes() == b"huge"));
    let back = pages::assemble(&head, pages.iter().map(|p| p.bytes.as_slice()), &limits)
        .expect("assemble");
    assert_eq!(back, tree);
}

#[test]
fn an_empty_tree_has_no_pages() {
    let tree = manifest(vec![]);
    let (head, pages) =
        pages::split(&tree, &TreeLimits::default(), DEFAULT_PAGE_BYTES).expect("split");
    assert!(pages.is_empty());
    let back =
        pages::assemble(&head, std::iter::empty(), &TreeLimits::default()).expect("assemble");
    assert_eq!(back, tree);
}

#[test]
fn altered_missing_or_swapped_pages_are_refused() {
    let tree = big_tree(3000);
    let limits = TreeLimits::default();
    let (head, pages) = pages::split(&tree, &limits, MIN_PAGE_BYTES).expect("split");
    assert!(pages.len() >= 3);
    let bytes: Vec<&[u8]> = pages.iter().map(|p| p.bytes.as_slice()).collect();
    let refused = |pages: Vec<&[u8]>, head: &pages::ManifestHead| {
        pages::assemble(head, pages, &limits)
            .map_err(|e| e.code().to_owned())
            .err()
    };
    let mut missing = bytes.clone();
    missing.pop();
    assert_eq!(
        refused(missing, &head).as_deref(),
        Some("invalid_workspace_manifest")
    );
    let mut swapped = bytes.clone();
    swapped.swap(0, 1);
    assert_eq!(
        refused(swapped, &head).as_deref(),
        Some("invalid_workspace_manifest")
    );
    let mut altered_page = pages[0].bytes.clone();
    altered_page[10] ^= 1;
    let mut altered = bytes.clone();
    altered[0] = &altered_page;
    assert_eq!(
        refused(altered, &head).as_deref(),
        Some("invalid_workspace_manifest")
    );
    // Pages that hash right but describe another tree than the head's root.
    let mut lying_head = head.clone();
    lying_head.root_hash = ContentHash::of(b"another tree");
    assert_eq!(
        refused(bytes.clone(), &lying_head).as_deref(),
        Some("invalid_workspace_manifest")
    );
    let mut wrong_count = head.clone();
    wrong_count.entries += 1;
    assert_eq!(
        refused(bytes, &wrong_count).as_deref(),
        Some("invalid_workspace_manifest")
    );
}

#[test]
fn a_page_bound_outside_the_limits_is_refused() {
    let tree = big_tree(1);
    let limits = TreeLimits::default();
    assert!(pages::split(&tree, &limits, MIN_PAGE_BYTES - 1).is_err());
    assert!(pages::split(&tree, &limits, pages::MAX_PAGE_BYTES + 1).is_err());
}

/// Pages of `after` whose bytes no page of `before` has (what a push
/// re-sends).
fn new_pages(before: &TreeManifest, after: &TreeManifest, bound: usize) -> (usize, usize) {
    let limits = TreeLimits::default();
    let (_, old) = pages::split(before, &limits, bound).expect("split");
    let (_, new) = pages::split(after, &limits, bound).expect("split");
    let old: std::collections::HashSet<_> = old.iter().map(|p| p.sha256).collect();
    let fresh = new.iter().filter(|p| !old.contains(&p.sha256)).count();
    (fresh, new.len())
}

#[test]
fn a_file_added_edited_or_removed_changes_about_one_page_not_every_later_one() {
    let tree = big_tree(20_000);
    let mut added = tree.clone();
    added
        .entries
        .insert(3_000, file("src/file-002999-new.rs", 1));
    let mut edited = tree.clone();
    edited.entries[2_000] = file("src/file-001999.rs", 3);
    let mut removed = tree.clone();
    removed.entries.remove(1_500);
    for bound in [MIN_PAGE_BYTES, DEFAULT_PAGE_BYTES / 4] {
        for (what, after) in [
            ("added", &added),
            ("edited", &edited),
            ("removed", &removed),
        ] {
            let (fresh, total) = new_pages(&tree, after, bound);
            assert!(total >= 8, "{total} pages of {bound} bytes");
            assert!(
                fresh <= 2,
                "a file {what}: {fresh} of {total} pages of {bound} bytes are new"
            );
        }
    }
    let limits = TreeLimits::default();
    let (head, split) = pages::split(&added, &limits, MIN_PAGE_BYTES).expect("split");
    assert!(split.iter().all(|p| p.bytes.len() <= MIN_PAGE_BYTES));
    let back = pages::assemble(&head, split.iter().map(|p| p.bytes.as_slice()), &limits)
        .expect("assemble");
    assert_eq!(back, added);
}
