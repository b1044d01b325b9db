//! Workspace versions over real SQLite and an in-memory KV store: a paged
//! manifest commits once its pages and chunks are held and reads back; a
//! missing page or chunk is a 409 listing it, a broken precondition a 412,
//! a tree past the limit a 413, and none of them changes anything; a
//! superseded, deleted or wiped version's chunks are collected, a chunk
//! still named is not.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use stasis_domain::{
    DomainError,
    chunk_store::{
        self,
        ports::run_ready,
        saga::{self as chunks, Upload},
    },
    snapshot,
    sql::{RowExt as _, SqlStore as _},
    workspace::{
        ChunkParams, ContentHash, Entry, TreeLimits, TreeManifest,
        pages::{self, MIN_PAGE_BYTES},
    },
    workspace_store::{Committed, Precondition, operations, ports::WorkspaceObject as _, saga},
};
use stasis_sqlite::SqliteStore;
use support::{MemoryKv, agent_object as object, agent_store as store, noise};

const PREFIX: &str = "t/r/a/";
const UPLOAD: Upload = Upload {
    pending_ttl_ms: 0,
    stale_before: 0,
};

/// A tree: a directory, an empty folder, an executable of two chunks, an
/// empty file, a dangling symlink, and `small` one-chunk files (the same
/// in every tree; `seed` varies the executable's bytes). Returns the manifest and every chunk's bytes.
fn tree(small: usize, seed: u8) -> (TreeManifest, Vec<Vec<u8>>) {
    let (a, b) = (noise(3000, seed), noise(2000, seed.wrapping_add(1)));
    let mut whole = a.clone();
    whole.extend_from_slice(&b);
    let mut entries = vec![
        Entry::dir("d"),
        Entry::dir("empty"),
        Entry::file(
            "d/run.sh",
            true,
            5000,
            ContentHash::of(&whole),
            vec![(ContentHash::of(&a), 3000), (ContentHash::of(&b), 2000)],
        ),
        Entry::file("zero", false, 0, ContentHash::of(b""), vec![]),
        Entry::symlink("link", "../missing"),
    ];
    let mut blobs = vec![a, b];
    for n in 0..small {
        let bytes = format!("file {n}\n").into_bytes();
        let hash = ContentHash::of(&bytes);
        let size = u32::try_from(bytes.len()).expect("small");
        entries.push(Entry::file(
            format!("d/f{n:05}-with-a-longish-name.txt"),
            false,
            u64::from(size),
            hash,
            vec![(hash, size)],
        ));
        blobs.push(bytes);
    }
    (TreeManifest::new(ChunkParams::default(), entries), blobs)
}

struct Paged {
    head: pages::ManifestHead,
    pages: Vec<Vec<u8>>,
}

fn paged(manifest: &TreeManifest) -> Paged {
    let (head, pages) =
        pages::split(manifest, &TreeLimits::default(), MIN_PAGE_BYTES).expect("splits");
    Paged {
        head,
        pages: pages.into_iter().map(|p| p.bytes).collect(),
    }
}

fn upload(store: &SqliteStore, kv: &MemoryKv, blobs: &[Vec<u8>]) {
    for bytes in blobs {
        let name = chunk_store::sha256_hex(bytes);
        run_ready(chunks::put_chunk(
            &object(store),
            kv,
            PREFIX,
            &name,
            bytes,
            UPLOAD,
        ))
        .expect("ready")
        .expect("stored");
    }
}

fn request(head: &pages::ManifestHead, precondition: Precondition) -> saga::CommitRequest {
    saga::CommitRequest {
        head: head.clone(),
        precondition,
        event_watermark: Some(7),
        limits: TreeLimits::default(),
        grace_ms: 0,
        pending_ttl_ms: 0,
    }
}

fn commit(
    store: &SqliteStore,
    kv: &MemoryKv,
    request: saga::CommitRequest,
) -> Result<Committed, DomainError> {
    run_ready(saga::commit(&object(store), kv, PREFIX, request)).expect("ready")
}

fn collect(store: &SqliteStore, kv: &MemoryKv) -> u64 {
    run_ready(chunks::collect_all(&object(store), kv, PREFIX, 0, 100))
        .expect("ready")
        .expect("collected")
}

fn held(kv: &MemoryKv, bytes: &[u8]) -> bool {
    let key = chunk_store::chunk_key(PREFIX, &chunk_store::sha256_hex(bytes));
    kv.values.borrow().contains_key(&key)
}

fn current_version(store: &SqliteStore) -> Option<u64> {
    stasis_domain::workspace_store::current(store)
        .expect("reads")
        .map(|v| v.version)
}

#[test]
fn a_paged_tree_commits_once_held_and_reads_back() {
    let (store, kv) = (store(), MemoryKv::default());
    let (manifest, blobs) = tree(2_000, 1);
    let paged = paged(&manifest);
    assert!(paged.pages.len() > 2, "{} pages", paged.pages.len());
    upload(&store, &kv, &blobs);
    upload(&store, &kv, &paged.pages);
    let first = Precondition {
        if_none_match_any: true,
        ..Precondition::default()
    };
    let committed = commit(&store, &kv, request(&paged.head, first)).expect("commits");
    assert!(committed.created);
    let version = committed.version;
    assert_eq!(
        (version.version, version.files, version.chunk_count),
        (1, 2_002, 2_002)
    );
    assert_eq!(version.event_watermark, 7);
    assert_eq!(version.head, paged.head);
    let current = stasis_domain::workspace_store::current(&store).expect("reads");
    assert_eq!(current, Some(version.clone()));
    // Every page and chunk is named once.
    let refs = store
        .execute(
            "SELECT COUNT(*), MIN(refs), MAX(refs) FROM snapshot_chunks",
            Vec::new(),
        )
        .expect("counts");
    let row = &refs[0];
    let expected = u64::try_from(blobs.len() + paged.pages.len()).expect("fits");
    assert_eq!(
        (
            row.uint(0).expect("n"),
            row.uint(1).expect("min"),
            row.uint(2).expect("max")
        ),
        (expected, 1, 1)
    );
    assert_eq!(collect(&store, &kv), 0, "nothing named is collected");
    // The same tree again: the current version, nothing new.
    let again =
        commit(&store, &kv, request(&paged.head, Precondition::default())).expect("answers");
    assert!(!again.created);
    assert_eq!(again.version.version, 1);
}

#[test]
fn a_missing_page_then_a_missing_chunk_is_a_409_listing_it_and_nothing_changes() {
    let (store, kv) = (store(), MemoryKv::default());
    let (manifest, blobs) = tree(3, 2);
    let paged = paged(&manifest);
    upload(&store, &kv, &blobs[1..]);
    let page_names: Vec<String> = paged.head.pages.iter().map(|p| p.sha256.to_hex()).collect();
    let err = commit(&store, &kv, request(&paged.head, Precondition::default()))
        .expect_err("pages missing");
    assert_eq!(
        err,
        DomainError::ChunksMissing {
            missing: page_names
        }
    );
    upload(&store, &kv, &paged.pages);
    let err = commit(&store, &kv, request(&paged.head, Precondition::default()))
        .expect_err("a chunk missing");
    let first = chunk_store::sha256_hex(&blobs[0]);
    assert_eq!(
        err,
        DomainError::ChunksMissing {
            missing: vec![first]
        }
    );
    assert_eq!(current_version(&store), None);
    upload(&store, &kv, &blobs[..1]);
    commit(&store, &kv, request(&paged.head, Precondition::default())).expect("commits");
    assert_eq!(current_version(&store), Some(1));
}

#[test]
fn preconditions_are_checked_on_the_root_hash() {
    let (store, kv) = (store(), MemoryKv::default());
    let (one, one_blobs) = tree(2, 3);
    let (two, two_blobs) = tree(2, 4);
    let (one, two) = (paged(&one), paged(&two));
    for blobs in [&one_blobs, &one.pages, &two_blobs, &two.pages] {
        upload(&store, &kv, blobs);
    }
    let if_match = |hash: ContentHash| Precondition {
        if_match: Some(Some(vec![hash])),
        if_none_match_any: false,
    };
    let code = |result: Result<Committed, DomainError>| {
        result
            .map(|c| c.version.version)
            .map_err(|e| e.code().to_owned())
    };
    let any = Precondition {
        if_match: Some(None),
        if_none_match_any: false,
    };
    assert_eq!(
        code(commit(&store, &kv, request(&one.head, any.clone()))),
        Err("precondition_failed".into()),
        "If-Match: * without a workspace"
    );
    let none = Precondition {
        if_match: None,
        if_none_match_any: true,
    };
    assert_eq!(
        code(commit(&store, &kv, request(&one.head, none.clone()))),
        Ok(1)
    );
    assert_eq!(
        code(commit(&store, &kv, request(&two.head, none))),
        Err("precondition_failed".into())
    );
    assert_eq!(
        code(commit(
            &store,
            &kv,
            request(&two.head, if_match(two.head.root_hash))
        )),
        Err("precondition_failed".into())
    );
    assert_eq!(
        code(commit(
            &store,
            &kv,
            request(&two.head, if_match(one.head.root_hash))
        )),
        Ok(2)
    );
    assert_eq!(code(commit(&store, &kv, request(&one.head, any))), Ok(3));
}

#[test]
fn bad_heads_are_400_and_a_tree_past_the_limit_413() {
    let (store, kv) = (store(), MemoryKv::default());
    let (manifest, blobs) = tree(3, 5);
    let paged = paged(&manifest);
    upload(&store, &kv, &blobs);
    upload(&store, &kv, &paged.pages);
    let mut wrong_root = request(&paged.head, Precondition::default());
    wrong_root.head.root_hash = ContentHash::of(b"another tree");
    let err = commit(&store, &kv, wrong_root).expect_err("refused");
    assert_eq!(err.code(), "invalid_workspace_manifest");
    let mut small = request(&paged.head, Precondition::default());
    small.limits.max_total_size = 100;
    let err = commit(&store, &kv, small).expect_err("refused");
    assert!(
        matches!(&err, DomainError::TooLarge { code, limit: 100, .. } if code == "workspace_too_large"),
        "{err:?}"
    );
    let mut lying = request(&paged.head, Precondition::default());
    lying.head.total_size -= 1;
    let err = commit(&store, &kv, lying).expect_err("refused");
    assert_eq!(err.code(), "invalid_workspace_manifest");
    assert_eq!(current_version(&store), None);
}

#[test]
fn superseded_deleted_and_wiped_versions_are_collected_and_shared_chunks_kept() {
    let (store, kv) = (store(), MemoryKv::default());
    let (one, one_blobs) = tree(4, 6);
    // The second tree shares the small files, not the executable.
    let (two, two_blobs) = tree(4, 8);
    let (one, two) = (paged(&one), paged(&two));
    for blobs in [&one_blobs, &one.pages] {
        upload(&store, &kv, blobs);
    }
    commit(&store, &kv, request(&one.head, Precondition::default())).expect("commits");
    for blobs in [&two_blobs, &two.pages] {
        upload(&store, &kv, blobs);
    }
    commit(&store, &kv, request(&two.head, Precondition::default())).expect("commits");
    assert!(collect(&store, &kv) > 0);
    assert!(!held(&kv, &one_blobs[0]), "the superseded chunk went");
    assert!(!held(&kv, &one.pages[0]), "the superseded page went");
    assert!(two_blobs.iter().all(|b| held(&kv, b)), "the current stay");
    assert!(held(&kv, &one_blobs[2]), "a shared chunk stays");
    // Delete, then everything goes.
    run_ready(object(&store).run_workspace(operations::remove(0)))
        .expect("ready")
        .expect("removed");
    assert!(collect(&store, &kv) > 0);
    assert!(
        kv.keys_under(PREFIX).is_empty(),
        "{:?}",
        kv.keys_under(PREFIX)
    );
    assert_eq!(current_version(&store), None);
    // A wipe of the agent drops a workspace too.
    for blobs in [&one_blobs, &one.pages] {
        upload(&store, &kv, blobs);
    }
    commit(&store, &kv, request(&one.head, Precondition::default())).expect("commits");
    snapshot::wipe(&store).expect("wiped");
    assert_eq!(current_version(&store), None);
    assert!(collect(&store, &kv) > 0);
    assert!(kv.keys_under(PREFIX).is_empty());
}

#[test]
fn an_import_stages_a_version_that_its_commit_makes_current_and_its_abort_drops() {
    use stasis_domain::workspace_store::{CommitArgs, staged};
    let (store, kv) = (store(), MemoryKv::default());
    let (one, one_blobs) = tree(3, 20);
    let (two, two_blobs) = tree(3, 21);
    let (one, two) = (paged(&one), paged(&two));
    for blobs in [&one_blobs, &one.pages, &two_blobs, &two.pages] {
        upload(&store, &kv, blobs);
    }
    commit(&store, &kv, request(&one.head, Precondition::default())).expect("commits");
    let stage = |paged: &Paged| {
        let head = staged::StagedHead {
            head: paged.head.clone(),
            event_watermark: Some(3),
        };
        staged::record_head(&store, &head).expect("recorded");
        let checked = run_ready(saga::check(
            &object(&store),
            &kv,
            PREFIX,
            &request(&paged.head, Precondition::default()),
        ))
        .expect("ready")
        .expect("checked");
        let args = CommitArgs {
            head: paged.head.clone(),
            files: checked.files,
            chunks: checked.chunks,
            precondition: Precondition::default(),
            event_watermark: Some(3),
            grace_ms: 0,
        };
        staged::stage(&store, &args).expect("staged");
    };
    // Staged: the current version stays, and nothing staged is collected.
    stage(&two);
    assert_eq!(current_version(&store), Some(1));
    collect(&store, &kv);
    assert!(
        two_blobs.iter().all(|b| held(&kv, b)),
        "the staged version's chunks stay"
    );
    // The abort drops it; its own chunks go.
    staged::clear(&store).expect("cleared");
    collect(&store, &kv);
    assert!(!held(&kv, &two_blobs[0]), "the dropped staged chunk went");
    assert!(held(&kv, &one_blobs[0]), "the current one stays");
    // Staged again and committed: it becomes current, the old one goes.
    upload(&store, &kv, &two_blobs);
    upload(&store, &kv, &two.pages);
    stage(&two);
    assert!(staged::commit(&store, 5).expect("committed"));
    let current = stasis_domain::workspace_store::current(&store)
        .expect("reads")
        .expect("one");
    assert_eq!(
        (current.head.root_hash, current.event_watermark),
        (two.head.root_hash, 3)
    );
    collect(&store, &kv);
    assert!(
        !held(&kv, &one_blobs[0]),
        "the replaced version's chunk went"
    );
    // A commit with nothing staged leaves no workspace.
    assert!(!staged::commit(&store, 6).expect("committed"));
    assert_eq!(current_version(&store), None);
}
