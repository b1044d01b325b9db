//! Workspaces (`/workspace`): a tree of every kind of entry pushed as
//! chunks and pages comes back byte for byte with its root hash; a commit
//! naming a page or chunk the store lacks is a 409 listing them; `If-Match`
//! and `If-None-Match` guard the current version; bad manifests are 400,
//! trees past the limit 413; none of these changes anything. A superseded
//! version is kept as history; chunks only a deleted version named are
//! collected; deleting the agent removes its workspace.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::big_lane;
use stasis_conformance::workspace::{Paged, Tree, WorkspaceAgent, noise};
use stasis_conformance::{assert_error, call, eventually, json, num};
use stasis_domain::workspace::{ContentHash, Entry, Node, pages::PageRef};

/// A small tree: a folder, an empty folder, an executable, an empty file
/// and a dangling symlink; `seed` varies the executable's bytes.
fn small_tree(seed: u64) -> Tree {
    let mut tree = Tree::default();
    tree.dir("src")
        .dir("empty")
        .file("src/run.sh", true, &noise(70_000, seed))
        .file("src/shared.txt", false, b"the same in every small tree\n")
        .file("zero", false, b"")
        .symlink("latest", "../nowhere");
    tree
}

fn first_push(agent: &WorkspaceAgent, tree: &Tree) -> Paged {
    let paged = tree.paged();
    let reply = agent.push(tree, &paged, &[("If-None-Match", "*")]);
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.header("etag"), Some(paged.etag().as_str()));
    paged
}

/// The current version's number, or `None` (404 `workspace_not_found`).
fn current(agent: &WorkspaceAgent) -> Option<u64> {
    let reply = agent.head();
    if reply.status == 404 {
        assert_error(&reply, 404, "workspace_not_found");
        return None;
    }
    Some(num(&reply.expect_json(200), "version"))
}

#[test]
fn a_tree_of_every_kind_round_trips_byte_for_byte() {
    let _lane = big_lane();
    let agent = WorkspaceAgent::fresh("ws-round-trip");
    call("PUT", &agent.log.path(""))
        .json(&json!({"role": "polecat"}))
        .send()
        .expect_json(201);
    let mut tree = small_tree(1);
    let big: Vec<Vec<u8>> = (0..400).map(|i| noise(256 * 1024, 1_000 + i)).collect();
    tree.file_of("big.bin", false, big)
        .file(b"caf\xe9-latin1.txt".to_vec(), false, b"not utf-8 named\n")
        .dir("many");
    for i in 0..20_000 {
        let text = format!("small file {}\n", i % 97);
        tree.file(format!("many/f{i:05}.txt"), i % 10 == 0, text.as_bytes());
    }
    let paged = tree.paged();
    assert!(paged.pages.len() > 1, "20,000 files take several pages");
    let reply = agent.push(&tree, &paged, &[("If-None-Match", "*")]);
    let created = reply.expect_json(201);
    assert_eq!(created["root_hash"], paged.head.root_hash.to_hex());
    assert_eq!(num(&created, "files"), 20_005);
    assert_eq!(num(&created, "entries"), paged.head.entries);
    assert_eq!(num(&created, "total_size"), paged.head.total_size);
    assert_eq!(num(&created, "page_count"), paged.pages.len() as u64);
    assert_eq!(num(&created, "chunk_count"), tree.chunks.len() as u64);

    let (head, manifest, files) = agent.pull();
    assert_eq!(head["root_hash"], paged.head.root_hash.to_hex());
    assert_eq!(num(&head, "version"), num(&created, "version"));
    assert_eq!(manifest, tree.manifest(), "the pages hold the tree pushed");
    assert_eq!(manifest.root_hash(), paged.head.root_hash);
    let big_bytes = &files[b"big.bin".as_slice()];
    assert_eq!(big_bytes.len(), 400 * 256 * 1024);
    assert_eq!(&big_bytes[..16], &noise(16, 1_000)[..]);
    assert_eq!(
        files[b"caf\xe9-latin1.txt".as_slice()],
        b"not utf-8 named\n"
    );
    assert_eq!(files[b"zero".as_slice()], b"");
    assert_eq!(files[b"many/f19999.txt".as_slice()], b"small file 17\n");
    let kinds =
        |wanted: fn(&Node) -> bool| manifest.entries.iter().filter(|e| wanted(&e.node)).count();
    assert_eq!(kinds(|n| matches!(n, Node::Dir)), 3);
    assert_eq!(
        kinds(|n| matches!(n, Node::Symlink { target } if target == b"../nowhere")),
        1
    );
    let run = manifest
        .entries
        .iter()
        .find(|e| e.path.as_bytes() == b"src/run.sh");
    assert!(matches!(run.map(|e| &e.node), Some(Node::File(f)) if f.executable));

    // The same tree again: the current version, nothing new.
    let again = agent.commit(&paged.body(), &[]);
    assert_eq!(
        num(&again.expect_json(200), "version"),
        num(&created, "version")
    );
    let unchanged = call("GET", &agent.path("/manifest"))
        .header("If-None-Match", &paged.etag())
        .send();
    assert_eq!(unchanged.status, 304);
    let record = call("GET", &agent.log.path("")).send();
    let workspace = &record.expect_json(200)["workspace"];
    assert_eq!(workspace["root_hash"], paged.head.root_hash.to_hex());
    assert_eq!(num(workspace, "files"), 20_005);
}

#[test]
fn a_commit_naming_a_missing_chunk_or_page_is_409_and_changes_nothing() {
    let agent = WorkspaceAgent::fresh("ws-missing");
    let old = first_push(&agent, &small_tree(2));
    let tree = small_tree(3);
    let paged = tree.paged();
    // No page uploaded: only the pages are listed.
    let error = assert_error(&agent.commit(&paged.body(), &[]), 409, "chunks_missing");
    assert_eq!(error["missing"], json!(paged.page_names()));
    // Pages and every chunk but the executable's.
    let run: Vec<String> = tree
        .manifest()
        .entries
        .iter()
        .filter_map(|e| e.as_file())
        .filter(|f| f.size == 70_000)
        .flat_map(|f| f.chunks.iter().map(|c| c.sha256.to_hex()))
        .collect();
    let mut pieces: Vec<&[u8]> = paged.pages.iter().map(Vec::as_slice).collect();
    pieces.extend(
        tree.chunks
            .iter()
            .filter(|(h, _)| !run.contains(&h.to_hex()))
            .map(|(_, b)| b.as_slice()),
    );
    agent.upload(&pieces);
    let error = assert_error(&agent.commit(&paged.body(), &[]), 409, "chunks_missing");
    assert_eq!(error["missing"], json!(run));
    let (head, _, _) = agent.pull();
    assert_eq!(
        head["root_hash"],
        old.head.root_hash.to_hex(),
        "nothing changed"
    );
    assert_eq!(current(&agent), Some(1));
}

#[test]
fn of_two_commits_on_the_same_if_match_exactly_one_wins() {
    let agent = WorkspaceAgent::fresh("ws-race");
    let base = first_push(&agent, &small_tree(4));
    let (one, two) = (small_tree(5), small_tree(6));
    let (paged_one, paged_two) = (one.paged(), two.paged());
    for (tree, paged) in [(&one, &paged_one), (&two, &paged_two)] {
        let mut pieces: Vec<&[u8]> = tree.chunks.values().map(Vec::as_slice).collect();
        pieces.extend(paged.pages.iter().map(Vec::as_slice));
        agent.upload(&pieces);
    }
    let etag = base.etag();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let racers: Vec<_> = [&paged_one, &paged_two]
            .map(|paged| {
                let (agent, etag) = (&agent, &etag);
                scope.spawn(move || agent.commit(&paged.body(), &[("If-Match", etag)]).status)
            })
            .into_iter()
            .collect();
        racers
            .into_iter()
            .map(|r| r.join().expect("a racer"))
            .collect()
    });
    let mut sorted = statuses.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![201, 412], "{statuses:?}");
    assert_eq!(current(&agent), Some(2));
    // If-None-Match: * on an existing workspace, and If-Match on the old one.
    let winner = if statuses[0] == 201 {
        &paged_one
    } else {
        &paged_two
    };
    let loser = if statuses[0] == 201 {
        &paged_two
    } else {
        &paged_one
    };
    assert_error(
        &agent.commit(&loser.body(), &[("If-None-Match", "*")]),
        412,
        "precondition_failed",
    );
    assert_error(
        &agent.commit(&loser.body(), &[("If-Match", &etag)]),
        412,
        "precondition_failed",
    );
    let retried = agent.commit(&loser.body(), &[("If-Match", &winner.etag())]);
    assert_eq!(num(&retried.expect_json(201), "version"), 3);
}

#[test]
fn a_chunk_whose_bytes_do_not_hash_to_its_name_is_refused() {
    let agent = WorkspaceAgent::fresh("ws-bad-hash");
    let other = ContentHash::of(b"something else").to_hex();
    assert_error(
        &agent.put_chunk(&other, b"these bytes"),
        400,
        "sha256_mismatch",
    );
    assert_eq!(
        agent.missing(std::slice::from_ref(&other)),
        vec![other.clone()]
    );
    assert_error(&agent.get_chunk(&other), 404, "chunk_not_found");
    assert_error(&agent.put_chunk("not-a-hash", b"x"), 400, "invalid_id");
}

#[test]
fn bad_manifests_are_400_and_trees_past_the_limit_413() {
    let agent = WorkspaceAgent::fresh("ws-invalid");
    let old = first_push(&agent, &small_tree(7));
    let tree = small_tree(8);
    let paged = tree.paged();
    let stale = agent.push(&tree, &paged, &[("If-Match", "\"0000\"")]);
    assert_error(&stale, 412, "precondition_failed");
    let refused = |body: &stasis_conformance::Value, status: u16, code: &str| {
        let error = assert_error(&agent.commit(body, &[]), status, code);
        assert_eq!(current(&agent), Some(1), "{code} changed nothing");
        error
    };
    let mut wrong_root = paged.body();
    wrong_root["root_hash"] = json!(ContentHash::of(b"another tree").to_hex());
    refused(&wrong_root, 400, "invalid_workspace_manifest");
    let mut wrong_count = paged.body();
    wrong_count["entries"] = json!(paged.head.entries + 1);
    refused(&wrong_count, 400, "invalid_workspace_manifest");
    // A page that is not one: held, named by its sha256, yet not a page.
    let garbage = b"[{\"path\":\"b\",\"kind\":\"dir\"},{\"path\":\"a\",\"kind\":\"dir\"}]".to_vec();
    agent.upload(&[garbage.as_slice()]);
    let mut unsorted = paged.body();
    unsorted["pages"] = json!([PageRef {
        sha256: ContentHash::of(&garbage),
        size: garbage.len() as u32
    }]);
    refused(&unsorted, 400, "invalid_workspace_manifest");
    // Past the 4 GiB default: the head says so, or (lying) its pages do.
    // 5 GiB named as one chunk 20,480 times (only the pages are uploaded).
    let mut huge = Tree::default();
    let piece = (ContentHash::of(b"a piece"), 256 * 1024);
    huge.entry(Entry::file(
        "huge.bin",
        false,
        5 << 30,
        ContentHash::of(b"huge"),
        vec![piece; 20_480],
    ));
    let huge_paged = huge.paged();
    agent.upload(
        &huge_paged
            .pages
            .iter()
            .map(Vec::as_slice)
            .collect::<Vec<_>>(),
    );
    let error = refused(&huge_paged.body(), 413, "workspace_too_large");
    assert!(error["limit"].as_u64().is_some(), "413 names its limit");
    let mut lying = huge_paged.body();
    lying["total_size"] = json!(1);
    refused(&lying, 413, "workspace_too_large");
    let (head, _, _) = agent.pull();
    assert_eq!(head["root_hash"], old.head.root_hash.to_hex());
}

#[test]
fn a_superseded_version_is_kept_and_only_a_deleted_ones_chunks_are_collected() {
    let agent = WorkspaceAgent::fresh("ws-collect");
    let old_tree = small_tree(10);
    let old = first_push(&agent, &old_tree);
    let new_tree = small_tree(11);
    let new = new_tree.paged();
    let reply = agent.push(&new_tree, &new, &[("If-Match", &old.etag())]);
    assert_eq!(reply.status, 201, "{}", reply.text());
    let shared = ContentHash::of(b"the same in every small tree\n").to_hex();
    let mut kept: Vec<String> = old_tree.chunks.keys().map(ContentHash::to_hex).collect();
    kept.extend(old.page_names());
    // The superseded version is kept as history: its chunks stay (their
    // collection once retention drops it: tests/history.rs).
    for name in &kept {
        assert_eq!(agent.get_chunk(name).status, 200, "{name} stays");
    }
    agent.pull();
    assert_eq!(call("DELETE", &agent.path("")).send().status, 204);
    assert_error(&agent.head(), 404, "workspace_not_found");
    // The deleted version is not kept: the chunks only it named go.
    let mut gone: Vec<String> = new_tree.chunks.keys().map(ContentHash::to_hex).collect();
    gone.retain(|name| *name != shared);
    gone.extend(new.page_names());
    // Read-only polling: `missing` would keep the chunks it finds.
    eventually("the deleted version's chunks collected", || {
        let left: Vec<&String> = gone
            .iter()
            .filter(|n| agent.get_chunk(n).status != 404)
            .collect();
        left.is_empty()
            .then_some(())
            .ok_or_else(|| format!("still served: {left:?}"))
    });
    for name in &kept {
        assert_eq!(agent.get_chunk(name).status, 200, "{name} is still named");
    }
    assert_error(
        &call("DELETE", &agent.path("")).send(),
        404,
        "workspace_not_found",
    );
}

#[test]
fn deleting_the_agent_removes_its_workspace() {
    let agent = WorkspaceAgent::fresh("ws-agent-delete");
    call("PUT", &agent.log.path(""))
        .json(&json!({"role": "polecat"}))
        .send();
    let tree = small_tree(12);
    let paged = first_push(&agent, &tree);
    assert_eq!(call("DELETE", &agent.log.path("")).send().status, 204);
    assert_eq!(current(&agent), None);
    let mut named: Vec<String> = tree.chunks.keys().map(ContentHash::to_hex).collect();
    named.extend(paged.page_names());
    eventually("the agent's chunks collected", || {
        let left: Vec<&String> = named
            .iter()
            .filter(|n| agent.get_chunk(n).status != 404)
            .collect();
        left.is_empty()
            .then_some(())
            .ok_or_else(|| format!("still served: {left:?}"))
    });
    let record = call("GET", &agent.log.path("")).send();
    assert_error(&record, 404, "agent_not_found");
}

#[test]
fn an_export_imported_elsewhere_brings_the_workspace_and_an_import_without_one_drops_it() {
    let source = WorkspaceAgent::fresh("ws-export");
    call("PUT", &source.log.path(""))
        .json(&json!({"role": "polecat"}))
        .send()
        .expect_json(201);
    let mut tree = small_tree(13);
    tree.dir("many");
    for i in 0..500 {
        tree.file(
            format!("many/f{i:04}.txt"),
            false,
            format!("{i}\n").as_bytes(),
        );
    }
    let paged = first_push(&source, &tree);
    let manifest = call("GET", &source.log.path("/export"))
        .send()
        .expect_json(200);
    assert_eq!(
        manifest["workspace"]["root_hash"],
        paged.head.root_hash.to_hex()
    );
    let exported = manifest["workspace_chunks"].as_array().map_or(0, Vec::len);
    assert_eq!(
        exported,
        tree.chunks.len() + paged.pages.len(),
        "every page and chunk once"
    );

    let target = WorkspaceAgent {
        log: source.log.sibling("agent-2"),
    };
    let imported = call("PUT", &target.log.path("/import"))
        .json(&manifest)
        .send();
    assert_eq!(imported.status, 200, "{}", imported.text());
    let (head, pulled, files) = target.pull();
    assert_eq!(head["root_hash"], paged.head.root_hash.to_hex());
    assert_eq!(pulled, tree.manifest());
    assert_eq!(files[b"many/f0499.txt".as_slice()], b"499\n");
    let record = call("GET", &target.log.path("")).send().expect_json(200);
    assert_eq!(
        record["workspace"]["root_hash"],
        paged.head.root_hash.to_hex()
    );

    // A manifest whose chunk is missing is refused whole.
    let mut short = manifest.clone();
    short["workspace_chunks"].as_array_mut().map(Vec::pop);
    let other = WorkspaceAgent {
        log: source.log.sibling("agent-3"),
    };
    let refused = call("PUT", &other.log.path("/import")).json(&short).send();
    assert_error(&refused, 409, "chunks_missing");
    assert_eq!(current(&other), None);
    // An import without a workspace replaces it with none.
    let reset = call("PUT", &target.log.path("/import"))
        .json(&json!({}))
        .send();
    assert_eq!(reset.status, 200, "{}", reset.text());
    assert_eq!(current(&target), None);
}
