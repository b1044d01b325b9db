//! Workspace chunk batches (`/workspace/batch/upload` and
//! `/workspace/batch/fetch`): many chunks in one framed body each way. A
//! tree uploaded in batches commits and comes back in batches byte for
//! byte; a frame whose bytes do not hash to its name, a frame cut short
//! and a batch past its limits are refused and store nothing; a fetch
//! naming a chunk the store lacks is a 404 listing it.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::big_lane;
use stasis_conformance::workspace::{Tree, WorkspaceAgent, noise};
use stasis_conformance::{Reply, assert_error, call, json, num};
use stasis_domain::chunk_store::frames::{
    BATCH_BODY_LIMIT, MAX_BATCH_CHUNKS, decode_frames, encode_frame,
};
use stasis_domain::workspace::ContentHash;

/// The framed body of `chunks`, each under its own name.
fn framed(chunks: &[&[u8]]) -> Vec<u8> {
    let mut body = Vec::new();
    for chunk in chunks {
        encode_frame(&mut body, ContentHash::of(chunk).as_raw(), chunk);
    }
    body
}

fn upload(agent: &WorkspaceAgent, body: Vec<u8>) -> Reply {
    call("POST", &agent.path("/batch/upload"))
        .header("Content-Type", "application/octet-stream")
        .body(body)
        .send()
}

fn fetch(agent: &WorkspaceAgent, names: &[String]) -> Reply {
    call("POST", &agent.path("/batch/fetch"))
        .json(&json!({ "chunks": names }))
        .send()
}

fn names(chunks: &[&[u8]]) -> Vec<String> {
    chunks.iter().map(|c| ContentHash::of(c).to_hex()).collect()
}

#[test]
fn a_tree_uploaded_in_batches_commits_and_comes_back_in_batches() {
    let _lane = big_lane();
    let agent = WorkspaceAgent::fresh("ws-batch-round-trip");
    let mut tree = Tree::default();
    tree.dir("src").file("empty", false, b"");
    for i in 0..300u64 {
        let len = if i % 50 == 0 {
            200_000
        } else {
            1_000 + i as usize
        };
        tree.file(format!("src/f{i:03}.txt"), i % 7 == 0, &noise(len, i));
    }
    let paged = tree.paged();
    let mut pieces: Vec<&[u8]> = tree.chunks.values().map(Vec::as_slice).collect();
    pieces.extend(paged.pages.iter().map(Vec::as_slice));
    pieces.sort_by_key(|p| ContentHash::of(p));
    // Two batches; the second repeats a chunk of the first, and one twice.
    let (first, second) = pieces.split_at(pieces.len() / 2);
    let mut again: Vec<&[u8]> = second.to_vec();
    again.push(first[0]);
    again.push(second[0]);
    let reply = upload(&agent, framed(first)).expect_json(200);
    assert_eq!(num(&reply, "chunks"), first.len() as u64);
    assert_eq!(num(&reply, "stored"), first.len() as u64);
    let bytes: usize = first.iter().map(|p| p.len()).sum();
    assert_eq!(num(&reply, "bytes"), bytes as u64);
    let reply = upload(&agent, framed(&again)).expect_json(200);
    assert_eq!(num(&reply, "chunks"), second.len() as u64 + 1, "{reply}");
    assert_eq!(num(&reply, "stored"), second.len() as u64, "{reply}");
    assert_eq!(agent.missing(&names(&pieces)), Vec::<String>::new());
    let committed = agent
        .commit(&paged.body(), &[("If-None-Match", "*")])
        .expect_json(201);
    assert_eq!(committed["root_hash"], paged.head.root_hash.to_hex());

    // Fetched back in batches: each chunk once, in the order first named.
    let mut wanted = names(&pieces);
    wanted.reverse();
    for batch in wanted.chunks(100) {
        let mut asked = batch.to_vec();
        asked.push(batch[0].clone());
        let reply = fetch(&agent, &asked);
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(
            reply.header("content-type"),
            Some("application/octet-stream")
        );
        let frames = decode_frames(&reply.body).expect("whole frames");
        assert_eq!(frames.len(), batch.len());
        for ((name, bytes), asked) in frames.iter().zip(batch) {
            assert_eq!(&ContentHash::from_raw(*name).to_hex(), asked);
            assert_eq!(&ContentHash::of(bytes).to_hex(), asked, "bytes of {asked}");
        }
    }
    // What single-chunk routes read agrees.
    assert_eq!(agent.fetch(&wanted[0]), {
        let reply = fetch(&agent, &wanted[..1]);
        decode_frames(&reply.body).expect("a frame")[0].1.to_vec()
    });
    let (head, _, files) = agent.pull();
    assert_eq!(head["root_hash"], paged.head.root_hash.to_hex());
    assert_eq!(files.len(), 301, "300 files and the empty one");
}

#[test]
fn a_frame_that_does_not_hash_to_its_name_or_is_cut_short_stores_nothing() {
    let agent = WorkspaceAgent::fresh("ws-batch-bad-frame");
    let good_a = noise(5_000, 1);
    let good_b = noise(6_000, 2);
    let liar = noise(7_000, 3);
    let mut body = framed(&[&good_a]);
    // Named after other bytes than it carries.
    encode_frame(
        &mut body,
        ContentHash::of(b"something else").as_raw(),
        &liar,
    );
    body.extend(framed(&[&good_b]));
    let reply = upload(&agent, body);
    let error = assert_error(&reply, 400, "sha256_mismatch");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&ContentHash::of(b"something else").to_hex()),
        "{message}"
    );
    let all = vec![
        ContentHash::of(&good_a).to_hex(),
        ContentHash::of(&good_b).to_hex(),
        ContentHash::of(b"something else").to_hex(),
        ContentHash::of(&liar).to_hex(),
    ];
    assert_eq!(agent.missing(&all), all, "nothing was stored");

    let mut cut = framed(&[&good_a, &good_b]);
    cut.truncate(cut.len() - 1);
    assert_error(&upload(&agent, cut), 400, "invalid_batch");
    let mut short_header = framed(&[&good_a]);
    short_header.extend_from_slice(&[7; 20]);
    assert_error(&upload(&agent, short_header), 400, "invalid_batch");
    assert_eq!(agent.missing(&all), all, "nothing was stored");
    let reply = fetch(&agent, &all[..1]);
    assert_error(&reply, 404, "chunk_not_found");
}

#[test]
fn a_batch_past_its_limits_is_413_and_stores_nothing() {
    let _lane = big_lane();
    let agent = WorkspaceAgent::fresh("ws-batch-too-large");
    // Past the byte limit (frames included).
    let big = noise(usize::try_from(BATCH_BODY_LIMIT).expect("fits"), 9);
    let body = framed(&[&big]);
    let error = assert_error(&upload(&agent, body), 413, "batch_too_large");
    assert_eq!(error.get("limit"), Some(&json!(BATCH_BODY_LIMIT)));
    // Past the chunk count.
    let small: Vec<Vec<u8>> = (0..=MAX_BATCH_CHUNKS as u64)
        .map(|i| noise(10, 100 + i))
        .collect();
    let refs: Vec<&[u8]> = small.iter().map(Vec::as_slice).collect();
    assert_error(&upload(&agent, framed(&refs)), 413, "batch_too_large");
    let mut all = names(&refs);
    all.push(ContentHash::of(&big).to_hex());
    assert_eq!(agent.missing(&all).len(), all.len(), "nothing was stored");
    // A fetch naming too many, or chunks that would pass the limit.
    let reply = fetch(&agent, &all);
    assert_error(&reply, 413, "batch_too_large");
    let thirds: Vec<Vec<u8>> = (0..3u64).map(|i| noise(3 << 20, 200 + i)).collect();
    for third in &thirds {
        upload(&agent, framed(&[third])).expect_json(200);
    }
    let refs: Vec<&[u8]> = thirds.iter().map(Vec::as_slice).collect();
    assert_error(&fetch(&agent, &names(&refs)), 413, "batch_too_large");
    let reply = fetch(&agent, &names(&refs[..2]));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(decode_frames(&reply.body).expect("frames").len(), 2);
}

#[test]
fn a_fetch_naming_a_missing_chunk_is_404_listing_it() {
    let agent = WorkspaceAgent::fresh("ws-batch-fetch-missing");
    let held = noise(3_000, 7);
    upload(&agent, framed(&[&held])).expect_json(200);
    let absent = ContentHash::of(b"never uploaded").to_hex();
    let reply = fetch(&agent, &[ContentHash::of(&held).to_hex(), absent.clone()]);
    let error = assert_error(&reply, 404, "chunk_not_found");
    assert_eq!(error.get("missing"), Some(&json!([absent])));
    let reply = fetch(&agent, &["not-a-hash".to_owned()]);
    assert_error(&reply, 400, "invalid_request");
    let reply = fetch(&agent, &[ContentHash::of(&held).to_hex()]);
    assert_eq!(reply.status, 200, "{}", reply.text());
}
