//! The push and the pull against a fake of the workspace routes (an in-memory store behind a
//! tiny HTTP server, inside these tests only): what goes over the wire, the skip, the 412 and
//! 409 rounds, and what a pull refuses.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod fake;

use std::path::Path;

use stasis_domain::workspace::{ChunkParams, ChunkRef, ContentHash, Entry, TreeManifest};

use super::prefetch::Prefetch;
use super::*;
use crate::ids::AgentRef;
use crate::workspace::{self, ScanOptions};
use fake::FakeServer;

fn polecat() -> AgentRef {
    AgentRef::new("t1", "hq", "polecat").expect("ids")
}

/// A tree with an empty folder, an executable, a dangling symlink, an empty file, and a file of
/// several chunks.
fn tree(root: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(root.join("src/empty")).expect("dirs");
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").expect("file");
    std::fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").expect("file");
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::os::unix::fs::symlink("missing/target", root.join("dangling")).expect("link");
    std::fs::write(root.join("zero"), "").expect("file");
    let big: Vec<u8> = (0..600_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(root.join("big.bin"), big).expect("file");
}

/// The root hash of the folder as it is now (no index).
fn root_of(folder: &Path) -> ContentHash {
    let options = ScanOptions {
        gitignore: false,
        ..ScanOptions::default()
    };
    workspace::scan(folder, &options)
        .expect("scan")
        .summary
        .root_hash
}

fn push_options(folder: &Path) -> PushOptions {
    let mut options = PushOptions::beside(folder);
    options.scan.gitignore = false;
    options
}

#[test]
fn a_tree_goes_up_and_comes_back_whole() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    let pushed = push(&client, &polecat(), &folder, &push_options(&folder)).expect("pushed");
    let receipt = pushed.receipt.clone().expect("a version");
    assert_eq!(receipt.version, 1);
    assert_eq!(pushed.root_hash, root_of(&folder));
    assert_eq!(pushed.transfer.chunks_sent, pushed.transfer.chunks_total);
    assert_eq!(pushed.transfer.pages_sent, 1);
    assert_eq!(
        server.first_commit_precondition(),
        Some("If-None-Match: *".into())
    );

    let copy = dir.path().join("copy");
    let pulled = pull(&client, &polecat(), &copy, &PullOptions::beside(&copy)).expect("pulled");
    let PullOutcome::Restored(restored) = pulled else {
        panic!("a restored tree");
    };
    assert_eq!(restored.root_hash, pushed.root_hash);
    assert_eq!(root_of(&copy), pushed.root_hash, "the tree as written");
    assert_eq!((restored.files, restored.symlinks), (4, 1));
    let synced = StateDir::beside(&copy).load(&polecat()).expect("recorded");
    assert_eq!((synced.version, synced.root_hash), (1, pushed.root_hash));
    // Every chunk and the page went up in one request and came back in two (the page, then
    // the chunks).
    assert_eq!(server.batches(), (1, 2));
}

#[test]
fn only_what_changed_is_sent_and_an_unchanged_tree_sends_nothing() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    let options = push_options(&folder);
    push(&client, &polecat(), &folder, &options).expect("first");
    let requests = server.requests();

    let again = push(&client, &polecat(), &folder, &options).expect("again");
    assert!(again.skipped(), "the same tree: skipped");
    assert_eq!(again.scan.files_read, 0, "the index vouched for every file");
    assert_eq!(server.requests(), requests, "no request at all");

    std::fs::write(folder.join("src/main.rs"), "fn main() { edit(); }\n").expect("edit");
    let puts = server.chunk_puts();
    let edited = push(&client, &polecat(), &folder, &options).expect("edited");
    assert_eq!(edited.scan.files_read, 1, "only the edited file is read");
    assert_eq!(edited.transfer.chunks_sent, 1, "one new chunk");
    assert_eq!(edited.transfer.pages_sent, 1, "one new page");
    assert_eq!(server.chunk_puts() - puts, 2, "the server saw two uploads");
    assert_eq!(server.batches().0, 2, "both in one batch");
    assert_eq!(edited.receipt.expect("stored").version, 2);
    assert_eq!(
        server.last_commit_precondition(),
        Some(format!("If-Match: \"{}\"", root_of_version(&server, 1)))
    );
}

#[test]
fn a_save_after_an_edit_asks_missing_only_about_names_the_last_sync_did_not_hold() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    // More names than a push sends without asking.
    for n in 0..100 {
        std::fs::write(folder.join(format!("src/{n}.txt")), format!("file {n}\n")).expect("file");
    }
    let options = push_options(&folder);
    let first = push(&client, &polecat(), &folder, &options).expect("first");
    let all_names = first.transfer.chunks_total + first.transfer.pages_total;
    assert_eq!(
        server.missing_names(),
        all_names,
        "a first push asks about every name"
    );

    std::fs::write(folder.join("src/main.rs"), "fn main() { edit(); }\n").expect("edit");
    let requests = server.requests().len();
    let edited = push(&client, &polecat(), &folder, &options).expect("edited");
    assert_eq!(
        server.missing_names(),
        all_names,
        "the new chunk and page fit one batch: sent without asking about any name"
    );
    assert_eq!(edited.transfer.chunks_sent + edited.transfer.pages_sent, 2);
    let asked: Vec<String> = server.requests().split_off(requests);
    assert_eq!(asked.len(), 2, "one upload, one commit: {asked:?}");

    // A copy pulled elsewhere knows the version's names too.
    let copy = dir.path().join("copy");
    pull(&client, &polecat(), &copy, &PullOptions::beside(&copy)).expect("pulled");
    std::fs::write(copy.join("zero"), "now one line\n").expect("edit");
    let pushed = push(&client, &polecat(), &copy, &push_options(&copy)).expect("from the copy");
    assert_eq!(server.missing_names(), all_names);
    assert_eq!(pushed.transfer.chunks_sent + pushed.transfer.pages_sent, 2);
}

#[test]
fn names_the_store_lost_since_the_last_sync_are_named_by_the_commit_and_sent_again() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    let options = push_options(&folder);
    push(&client, &polecat(), &folder, &options).expect("first");
    server.forget_everything();
    std::fs::write(folder.join("src/main.rs"), "fn main() { edit(); }\n").expect("edit");
    let edited = push(&client, &polecat(), &folder, &options).expect("edited");
    assert_eq!(edited.receipt.expect("stored").version, 2);
    assert_eq!(
        edited.transfer.chunks_sent, edited.transfer.chunks_total,
        "every chunk went again"
    );
    let copy = dir.path().join("copy");
    let pulled = pull(&client, &polecat(), &copy, &PullOptions::beside(&copy)).expect("pulled");
    let PullOutcome::Restored(restored) = pulled else {
        panic!("a restored tree");
    };
    assert_eq!(restored.root_hash, root_of(&folder));
}

fn root_of_version(server: &FakeServer, version: u64) -> ContentHash {
    server.root_of(version).expect("a version")
}

#[test]
fn a_stale_precondition_is_read_again_and_the_commit_retried_once() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    tree(&a);
    std::fs::create_dir_all(&b).expect("b");
    std::fs::write(b.join("other"), "another tree\n").expect("file");
    push(&client, &polecat(), &a, &push_options(&a)).expect("a first");
    // b has never synced: If-None-Match: * meets a current version.
    let from_b = push(&client, &polecat(), &b, &push_options(&b)).expect("b over a");
    assert_eq!(from_b.receipt.expect("stored").version, 2);
    assert_eq!(server.conflicts(), 1);
    // a's record names version 1: its If-Match is stale.
    std::fs::write(a.join("zero"), "now one line\n").expect("edit");
    let from_a = push(&client, &polecat(), &a, &push_options(&a)).expect("a again");
    assert_eq!(from_a.receipt.expect("stored").version, 3);
    assert_eq!(server.conflicts(), 2);

    server.always_conflict();
    std::fs::write(a.join("zero"), "two\n").expect("edit");
    let refused = push(&client, &polecat(), &a, &push_options(&a)).expect_err("412 twice");
    assert_eq!(refused.status(), Some(412));
    assert_eq!(refused.exit_code(), crate::exit::REFUSED);
}

#[test]
fn a_commit_that_names_missing_chunks_uploads_them_and_commits_again() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    server.forget_on_first_commit();
    let pushed = push(&client, &polecat(), &folder, &push_options(&folder)).expect("pushed");
    assert_eq!(pushed.receipt.expect("stored").version, 1);
    assert!(
        pushed.transfer.chunks_sent > pushed.transfer.chunks_total,
        "the forgotten chunk went twice"
    );
}

#[test]
fn a_pull_refuses_a_folder_that_holds_anything_and_writes_nothing_without_a_workspace() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let full = dir.path().join("full");
    std::fs::create_dir_all(&full).expect("dir");
    std::fs::write(full.join("keep"), "mine").expect("file");
    let refused =
        pull(&client, &polecat(), &full, &PullOptions::beside(&full)).expect_err("refused");
    assert!(refused.to_string().contains("never merges"), "{refused}");
    assert_eq!(refused.exit_code(), crate::exit::LOCAL);
    assert!(server.requests().is_empty(), "refused before any request");

    let empty = dir.path().join("empty");
    let none = pull(&client, &polecat(), &empty, &PullOptions::beside(&empty)).expect("answered");
    assert!(matches!(none, PullOutcome::NoWorkspace));
    assert!(!empty.exists(), "nothing written");
}

#[test]
fn a_chunk_garbled_by_the_server_fails_the_pull_and_leaves_no_folder() {
    let server = FakeServer::start();
    let client = server.client();
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("work");
    tree(&folder);
    push(&client, &polecat(), &folder, &push_options(&folder)).expect("pushed");
    server.garble_chunks();
    let copy = dir.path().join("copy");
    let failed =
        pull(&client, &polecat(), &copy, &PullOptions::beside(&copy)).expect_err("garbled");
    assert_eq!(failed.exit_code(), crate::exit::INTEGRITY, "{failed}");
    assert!(!copy.exists(), "no partial tree");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(workspace::RESTORE_SUFFIX)
        })
        .collect();
    assert!(leftovers.is_empty(), "the restore's folder is removed");
}

#[test]
fn missing_is_asked_at_most_32768_names_at_a_time() {
    let server = FakeServer::start();
    let client = server.client();
    let agent = polecat();
    let routes = super::chunks::ChunkRoutes {
        client: &client,
        agent: &agent,
        deadline: None,
    };
    let names: Vec<ContentHash> = (0..40_000u32)
        .map(|i| ContentHash::of(&i.to_le_bytes()))
        .collect();
    let missing = routes.missing(&names).expect("answered");
    assert_eq!(missing.len(), names.len(), "the fake holds none");
    let asked = server.requests();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked.iter().all(|r| r.ends_with("/workspace/missing")));
}

#[test]
fn pages_hold_about_a_two_hundredth_of_the_tree_within_the_domains_bounds() {
    use stasis_domain::workspace::pages::{DEFAULT_PAGE_BYTES, MIN_PAGE_BYTES};
    assert_eq!(page_bytes(0), MIN_PAGE_BYTES);
    assert_eq!(page_bytes(11 << 20), MIN_PAGE_BYTES, "a 11 MB checkout");
    assert_eq!(page_bytes(100 << 20), (100 << 20) / 200);
    assert_eq!(page_bytes(200 << 20), DEFAULT_PAGE_BYTES, "a 200 MB tree");
    assert_eq!(page_bytes(u64::MAX), DEFAULT_PAGE_BYTES);
}

#[test]
fn the_prefetch_hands_every_chunk_in_order_even_when_named_twice() {
    let chunk = |text: &[u8]| ChunkRef {
        sha256: ContentHash::of(text),
        size: text.len() as u32,
    };
    let parts: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("part {i}").into_bytes())
        .collect();
    let mut entries = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let again = &parts[(i * 7) % parts.len()];
        let mut whole = part.clone();
        whole.extend_from_slice(again);
        let chunks = vec![
            (ContentHash::of(part), part.len() as u32),
            (ContentHash::of(again), again.len() as u32),
        ];
        entries.push(Entry::file(
            format!("f{i:03}").into_bytes(),
            false,
            whole.len() as u64,
            ContentHash::of(&whole),
            chunks,
        ));
    }
    let manifest = TreeManifest::new(ChunkParams::default(), entries);
    let by_hash: std::collections::HashMap<ContentHash, Vec<u8>> = parts
        .iter()
        .map(|p| (ContentHash::of(p), p.clone()))
        .collect();
    let batches = std::sync::atomic::AtomicUsize::new(0);
    let fetch = |chunks: &[ChunkRef]| {
        batches.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(chunks
            .iter()
            .map(|c| by_hash.get(&c.sha256).cloned().expect("known"))
            .collect())
    };
    let asked = Prefetch::run(&manifest, &fetch, |take| {
        let mut got = Vec::new();
        for file in manifest.entries.iter().filter_map(Entry::as_file) {
            for c in &file.chunks {
                let bytes = take(c).expect("fetched");
                assert_eq!(chunk(&bytes), *c);
                got.push(c.sha256);
            }
        }
        got
    });
    assert_eq!(asked.len(), 600);
    // 300 distinct chunks in a few batches (plus the ones fetched again), not one per chunk.
    let batches = batches.into_inner();
    assert!(batches < 100, "{batches} fetches");
}
