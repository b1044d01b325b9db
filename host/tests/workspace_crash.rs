//! A host killed with `kill -9` in the middle of workspace pushes (chunks,
//! pages and manifest commits from several pushers) loses nothing it
//! acknowledged and never serves a broken tree: after a restart, the
//! current version is one of the trees pushed, every page and chunk it
//! names is served and verifies, its files rebuild their sha256s and the
//! pages their root hash; and once a sweep ran (past the pending time) the
//! agent's KV folder holds exactly the chunks the current version names.

#![allow(clippy::expect_used, reason = "tests fail loudly")]

mod support;

use stasis_domain::workspace::{
    ChunkParams, ContentHash, ContentHasher, Entry, Node, TreeLimits, TreeManifest,
    pages::{self, MIN_PAGE_BYTES, ManifestHead},
};
use std::{
    collections::{HashMap, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};
use support::{Server, admin, agent, eventually};

const AGENT_PATH: &str = "/api/towns/crash/rigs/r/agents/polecat";
/// Uploaded chunks no version names are kept this long: short, so that the
/// sweep after the restart may collect what the killed pushes left.
const PENDING_TTL: &str = "1s";
const CHUNK: usize = 64 * 1024;

/// A tree of a pusher's round: 300 files (most shared between rounds,
/// some new), one of them cut into several chunks; small pages, so that
/// the manifest takes several.
fn tree(round: usize, pusher: usize) -> (TreeManifest, HashMap<ContentHash, Vec<u8>>) {
    let mut chunks = HashMap::new();
    let mut entries = vec![Entry::dir("src")];
    for file in 0..300 {
        let fresh = file % 50 == round % 50;
        let text = if fresh {
            format!(
                "file {file}, round {round} of pusher {pusher}\n{}",
                "x".repeat(file)
            )
        } else {
            format!("file {file}\n{}", "y".repeat(file))
        };
        let bytes = text.into_bytes();
        let hash = ContentHash::of(&bytes);
        let size = u32::try_from(bytes.len()).expect("small");
        entries.push(Entry::file(
            format!("src/file-{file:04}-of-a-tree.txt"),
            false,
            u64::from(size),
            hash,
            vec![(hash, size)],
        ));
        chunks.insert(hash, bytes);
    }
    let big: Vec<u8> = (0..CHUNK * 5 + 77)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add((round * 7 + pusher) as u8)
                ^ (i >> 9) as u8
        })
        .collect();
    let mut whole = ContentHasher::default();
    let mut refs = Vec::new();
    for piece in big.chunks(CHUNK) {
        whole.update(piece);
        let hash = ContentHash::of(piece);
        refs.push((hash, u32::try_from(piece.len()).expect("a chunk")));
        chunks.insert(hash, piece.to_vec());
    }
    entries.push(Entry::file(
        "big.bin",
        true,
        big.len() as u64,
        whole.finish(),
        refs,
    ));
    (TreeManifest::new(ChunkParams::default(), entries), chunks)
}

fn paged(manifest: &TreeManifest) -> (ManifestHead, Vec<Vec<u8>>) {
    let (head, pages) =
        pages::split(manifest, &TreeLimits::default(), MIN_PAGE_BYTES).expect("splits");
    (head, pages.into_iter().map(|p| p.bytes).collect())
}

/// One push: missing, uploads, commit on whatever is current (`If-Match:
/// *`, or `If-None-Match: *` for the first). `None` when the server is
/// gone; `Some(version)` when the commit was acknowledged.
fn push(client: &ureq::Agent, base: &str, round: usize, pusher: usize) -> Option<Option<u64>> {
    let (manifest, chunks) = tree(round, pusher);
    let (head, pages) = paged(&manifest);
    let mut pieces: Vec<&[u8]> = chunks.values().map(Vec::as_slice).collect();
    pieces.extend(pages.iter().map(Vec::as_slice));
    let names: Vec<String> = pieces.iter().map(|p| ContentHash::of(p).to_hex()).collect();
    let mut asked = client
        .post(&format!("{base}/workspace/missing"))
        .header("Authorization", admin())
        .send_json(serde_json::json!({ "chunks": names }))
        .ok()?;
    let missing: serde_json::Value = asked.body_mut().read_json().ok()?;
    let missing: HashSet<&str> = missing["missing"]
        .as_array()
        .map(|list| list.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    for (name, piece) in names.iter().zip(&pieces) {
        if !missing.contains(name.as_str()) {
            continue;
        }
        let status = client
            .put(&format!("{base}/workspace/chunks/{name}"))
            .header("Authorization", admin())
            .header("Content-Type", "application/octet-stream")
            .send(*piece)
            .ok()?
            .status();
        if !status.is_success() {
            return Some(None);
        }
    }
    let condition = if round == 0 && pusher == 0 {
        ("If-None-Match", "*")
    } else {
        ("If-Match", "*")
    };
    let mut committed = client
        .put(&format!("{base}/workspace/manifest"))
        .header("Authorization", admin())
        .header(condition.0, condition.1)
        .send_json(&head)
        .ok()?;
    if committed.status() != 201 {
        return Some(None);
    }
    let receipt: serde_json::Value = committed.body_mut().read_json().ok()?;
    Some(receipt["version"].as_u64())
}

fn get(client: &ureq::Agent, url: &str) -> Vec<u8> {
    let mut response = client
        .get(url)
        .header("Authorization", admin())
        .call()
        .expect("GET after the restart");
    assert_eq!(response.status(), 200, "{url}");
    response
        .body_mut()
        .with_config()
        .limit(4 << 20)
        .read_to_vec()
        .expect("a body")
}

#[test]
fn after_kill_dash_nine_the_current_workspace_is_whole_and_nothing_else_is_kept() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = Server::start(data.path(), &["--snapshot-pending-ttl", PENDING_TTL]);
    let base = format!("{}{AGENT_PATH}", server.base);
    let roots: Arc<Mutex<HashSet<ContentHash>>> = Arc::default();
    let newest = Arc::new(Mutex::new(0_u64));
    let stop = Arc::new(AtomicBool::new(false));
    // The first tree, alone, so that later pushes have a version to match.
    let first = push(&agent(), &base, 0, 0).expect("the server answers");
    assert_eq!(first, Some(1));
    roots.lock().expect("lock").insert(tree(0, 0).0.root_hash());
    let pushers: Vec<_> = (0..3)
        .map(|pusher| {
            let (base, roots, newest, stop) = (
                base.clone(),
                Arc::clone(&roots),
                Arc::clone(&newest),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let client = agent();
                for round in 1..10_000 {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    roots
                        .lock()
                        .expect("lock")
                        .insert(tree(round, pusher).0.root_hash());
                    let Some(pushed) = push(&client, &base, round, pusher) else {
                        return; // the server is gone
                    };
                    if let Some(version) = pushed {
                        let mut newest = newest.lock().expect("lock");
                        *newest = (*newest).max(version);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(2_500));
    server.kill_hard();
    stop.store(true, Ordering::Relaxed);
    for pusher in pushers {
        pusher.join().expect("pusher thread");
    }
    let newest = *newest.lock().expect("lock");
    assert!(newest > 1, "some pushes finished before the kill");

    let server = Server::start(data.path(), &["--snapshot-pending-ttl", PENDING_TTL]);
    let base = format!("{}{AGENT_PATH}", server.base);
    let client = agent();
    let current = verify_current(&client, &base, &roots.lock().expect("lock"));
    assert!(
        current.version >= newest,
        "an acknowledged version ({newest}) was lost: found {}",
        current.version
    );

    // Past the pending time, one more push collects and a sweep removes
    // what the crash left.
    std::thread::sleep(Duration::from_millis(1_500));
    let last = push(&client, &base, 77, 7).expect("the server answers");
    assert!(last.is_some(), "the push after the restart is stored");
    let current = verify_current(&client, &base, &HashSet::from([tree(77, 7).0.root_hash()]));
    // A whole-file snapshot PUT runs the agent's listing sweep.
    let status = client
        .put(&format!("{base}/db-snapshot"))
        .header("Authorization", admin())
        .header("Content-Type", "application/octet-stream")
        .send(&b"a small kilo.db"[..])
        .expect("PUT")
        .status();
    assert_eq!(status, 201);
    let folder = data.path().join("kv/snapshots/crash/r/polecat/chunks");
    eventually(
        "the KV folder holds exactly the current version's chunks",
        || {
            let mut stored: Vec<String> = std::fs::read_dir(&folder)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            stored.sort();
            (stored == current.named)
                .then_some(())
                .ok_or_else(|| format!("{} stored, {} named", stored.len(), current.named.len()))
        },
    );
    drop(server);
}

struct Current {
    version: u64,
    /// Every page and chunk it names, sorted, once each.
    named: Vec<String>,
}

/// Reads the current version whole: its head is one of `roots`, every page
/// and chunk verifies, the files their sha256s, the pages the root hash.
fn verify_current(client: &ureq::Agent, base: &str, roots: &HashSet<ContentHash>) -> Current {
    let text = get(client, &format!("{base}/workspace/manifest"));
    let head: ManifestHead = serde_json::from_slice(&text).expect("a head");
    let version = serde_json::from_slice::<serde_json::Value>(&text).expect("json")["version"]
        .as_u64()
        .expect("a version");
    assert!(
        roots.contains(&head.root_hash),
        "the current tree is one that was pushed"
    );
    let fetch = |name: &str| {
        let bytes = get(client, &format!("{base}/workspace/chunks/{name}"));
        assert_eq!(ContentHash::of(&bytes).to_hex(), name);
        bytes
    };
    let page_bytes: Vec<Vec<u8>> = head
        .pages
        .iter()
        .map(|p| fetch(&p.sha256.to_hex()))
        .collect();
    let manifest = pages::assemble(
        &head,
        page_bytes.iter().map(Vec::as_slice),
        &TreeLimits::default(),
    )
    .expect("the pages rebuild a tree of that root hash");
    let mut named: Vec<String> = head.pages.iter().map(|p| p.sha256.to_hex()).collect();
    for entry in &manifest.entries {
        let Node::File(file) = &entry.node else {
            continue;
        };
        let mut whole = ContentHasher::default();
        for chunk in &file.chunks {
            whole.update(&fetch(&chunk.sha256.to_hex()));
            named.push(chunk.sha256.to_hex());
        }
        assert_eq!(whole.finish(), file.sha256, "{} rebuilds", entry.path);
    }
    named.sort();
    named.dedup();
    Current { version, named }
}
