//! The delta protocol under `/db-snapshot`: a client asks which chunks the
//! agent's store lacks, uploads those (each verified against its name),
//! and commits a manifest with `If-Match`; a commit naming a chunk the
//! store does not hold is a 409 `chunks_missing` listing them and changes
//! nothing; chunks no manifest names any more (a superseded version is kept
//! as history, a deleted one is not) are collected, after a
//! supersede and after a DELETE. A refused request changes nothing.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::{SnapshotAgent, assert_same_bytes, bytes, etag, sha256_hex};
use stasis_conformance::{Reply, Value, assert_error, call, json, num};

/// The smallest chunk size the protocol allows: keeps the cases small.
const CHUNK: usize = 4096;

/// A file cut into chunks as a client cuts it.
struct Split {
    body: Vec<u8>,
    chunks: Vec<Vec<u8>>,
}

impl Split {
    fn new(body: &[u8]) -> Split {
        Split {
            body: body.to_vec(),
            chunks: body.chunks(CHUNK).map(<[u8]>::to_vec).collect(),
        }
    }

    fn names(&self) -> Vec<String> {
        self.chunks.iter().map(|c| sha256_hex(c)).collect()
    }

    fn manifest(&self) -> Value {
        json!({
            "size": self.body.len(),
            "sha256": sha256_hex(&self.body),
            "chunk_size": CHUNK,
            "chunks": self.names(),
        })
    }
}

fn missing(agent: &SnapshotAgent, names: &[String]) -> Vec<String> {
    let reply = call("POST", &format!("{}/missing", agent.path()))
        .json(&json!({ "chunks": names }))
        .send();
    let body = reply.expect_json(200);
    let list = body["missing"]
        .as_array()
        .unwrap_or_else(|| panic!("missing is a list: {body}"));
    list.iter()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect()
}

fn put_chunk(agent: &SnapshotAgent, name: &str, bytes: &[u8]) -> Reply {
    call("PUT", &format!("{}/chunks/{name}", agent.path()))
        .header("Content-Type", "application/octet-stream")
        .body(bytes.to_vec())
        .send()
}

fn get_chunk(agent: &SnapshotAgent, name: &str) -> Reply {
    call("GET", &format!("{}/chunks/{name}", agent.path())).send()
}

fn commit(agent: &SnapshotAgent, manifest: &Value, if_match: Option<&str>) -> Reply {
    let mut request = call("PUT", &format!("{}/manifest", agent.path()));
    if let Some(etag) = if_match {
        request = request.header("If-Match", etag);
    }
    request.json(manifest).send()
}

/// Uploads whatever the store lacks and commits; returns the 201 body.
fn push(agent: &SnapshotAgent, split: &Split, if_match: Option<&str>) -> Value {
    let lacking = missing(agent, &split.names());
    for (name, chunk) in split.names().iter().zip(&split.chunks) {
        if lacking.contains(name) {
            let status = put_chunk(agent, name, chunk).status;
            assert!(status == 201 || status == 200, "chunk upload: {status}");
        }
    }
    commit(agent, &split.manifest(), if_match).expect_json(201)
}

fn assert_whole_file(agent: &SnapshotAgent, body: &[u8]) {
    let reply = call("GET", &agent.path()).send();
    assert_eq!(reply.status, 200, "GET: {}", reply.text());
    assert_same_bytes(&reply.body, body);
}

#[test]
fn missing_lists_the_chunks_the_store_lacks_in_order_once_each() {
    let agent = SnapshotAgent::fresh("chunks-missing");
    let split = Split::new(bytes(3 * CHUNK, 0));
    let names = split.names();
    let asked = vec![names[2].clone(), names[0].clone(), names[2].clone()];
    assert_eq!(
        missing(&agent, &asked),
        vec![names[2].clone(), names[0].clone()]
    );
    assert_eq!(put_chunk(&agent, &names[0], &split.chunks[0]).status, 201);
    assert_eq!(missing(&agent, &asked), vec![names[2].clone()]);
    assert_eq!(put_chunk(&agent, &names[0], &split.chunks[0]).status, 200);
}

#[test]
fn a_pushed_manifest_is_served_whole_and_as_a_manifest() {
    let agent = SnapshotAgent::fresh("chunks-push");
    let split = Split::new(bytes(5 * CHUNK + 100, 1));
    let created = push(&agent, &split, None);
    assert_eq!(num(&created, "chunk_count"), 6);
    assert_eq!(num(&created, "size"), split.body.len() as u64);
    assert_eq!(created["sha256"], sha256_hex(&split.body));
    assert_whole_file(&agent, &split.body);
    let manifest = call("GET", &format!("{}/manifest", agent.path())).send();
    let manifest = manifest.expect_json(200);
    assert_eq!(manifest["chunks"], json!(split.names()));
    assert_eq!(num(&manifest, "chunk_size"), CHUNK as u64);
    let chunk = get_chunk(&agent, &split.names()[5]);
    assert_eq!(chunk.status, 200);
    assert_eq!(chunk.body, split.chunks[5]);
    assert_eq!(
        chunk.header("x-stasis-sha256"),
        Some(split.names()[5].as_str())
    );
}

#[test]
fn a_chunk_that_does_not_hash_to_its_name_is_refused_and_not_stored() {
    let agent = SnapshotAgent::fresh("chunks-bad-hash");
    let split = Split::new(bytes(CHUNK, 2));
    let other = sha256_hex(b"something else");
    assert_error(
        &put_chunk(&agent, &other, &split.chunks[0]),
        400,
        "sha256_mismatch",
    );
    assert_eq!(
        missing(&agent, std::slice::from_ref(&other)),
        vec![other.clone()]
    );
    assert_error(&get_chunk(&agent, &other), 404, "chunk_not_found");
    assert_error(&put_chunk(&agent, "not-a-hash", b"x"), 400, "invalid_id");
}

#[test]
fn a_commit_naming_a_missing_chunk_is_refused_listing_it_and_changes_nothing() {
    let agent = SnapshotAgent::fresh("chunks-commit-missing");
    let old = Split::new(bytes(2 * CHUNK, 3));
    let created = push(&agent, &old, None);
    let new = Split::new(bytes(3 * CHUNK, 4));
    put_chunk(&agent, &new.names()[0], &new.chunks[0]);
    let error = assert_error(
        &commit(&agent, &new.manifest(), None),
        409,
        "chunks_missing",
    );
    assert_eq!(error["missing"], json!(new.names()[1..].to_vec()));
    assert_whole_file(&agent, &old.body);
    let manifest = call("GET", &format!("{}/manifest", agent.path())).send();
    assert_eq!(manifest.expect_json(200)["version"], created["version"]);
}

#[test]
fn a_manifest_breaking_the_chunking_rules_is_invalid() {
    let agent = SnapshotAgent::fresh("chunks-invalid");
    let split = Split::new(bytes(2 * CHUNK, 5));
    push(&agent, &split, None);
    let mut wrong_count = split.manifest();
    wrong_count["chunks"] = json!([split.names()[0]]);
    assert_error(&commit(&agent, &wrong_count, None), 400, "invalid_manifest");
    let mut odd_size = split.manifest();
    odd_size["chunk_size"] = json!(5000);
    assert_error(&commit(&agent, &odd_size, None), 400, "invalid_manifest");
    let mut wrong_place = split.manifest();
    wrong_place["size"] = json!(CHUNK + 10);
    assert_error(&commit(&agent, &wrong_place, None), 400, "invalid_manifest");
    let mut too_large = split.manifest();
    too_large["size"] = json!(1u64 << 31);
    too_large["chunk_size"] = json!(1u64 << 24);
    too_large["chunks"] = json!(vec![split.names()[0].clone(); 128]);
    let error = assert_error(&commit(&agent, &too_large, None), 413, "snapshot_too_large");
    assert!(error["limit"].as_u64().is_some(), "413 names its limit");
    assert_whole_file(&agent, &split.body);
}

#[test]
fn of_two_pushers_racing_with_if_match_one_wins_and_the_other_gets_412() {
    let agent = SnapshotAgent::fresh("chunks-race");
    let base = Split::new(bytes(2 * CHUNK, 6));
    let created = push(&agent, &base, None);
    let base_etag = format!("\"{}\"", created["sha256"].as_str().unwrap_or_default());
    let first = Split::new(bytes(2 * CHUNK, 7));
    let second = Split::new(bytes(2 * CHUNK, 8));
    for split in [&first, &second] {
        for (name, chunk) in split.names().iter().zip(&split.chunks) {
            put_chunk(&agent, name, chunk);
        }
    }
    let won = commit(&agent, &first.manifest(), Some(&base_etag));
    assert_eq!(won.status, 201, "{}", won.text());
    let lost = commit(&agent, &second.manifest(), Some(&base_etag));
    assert_error(&lost, 412, "precondition_failed");
    assert_whole_file(&agent, &first.body);
    let retried = commit(&agent, &second.manifest(), Some(&etag(&first.body)));
    assert_eq!(retried.status, 201, "{}", retried.text());
    assert_whole_file(&agent, &second.body);
}

#[test]
fn chunks_a_superseded_manifest_named_stay_while_history_keeps_it() {
    let agent = SnapshotAgent::fresh("chunks-gc-supersede");
    let old = Split::new(bytes(3 * CHUNK, 9));
    push(&agent, &old, None);
    // The new file keeps the old first chunk and changes the rest.
    let mut body = old.chunks[0].clone();
    body.extend_from_slice(bytes(2 * CHUNK, 10));
    let new = Split::new(&body);
    push(&agent, &new, Some(&etag(&old.body)));
    // The superseded version is kept as history, naming its chunks (their
    // collection once retention drops it: tests/history.rs).
    for name in old.names() {
        assert_eq!(get_chunk(&agent, &name).status, 200, "{name} stays");
    }
    assert!(missing(&agent, &old.names()).is_empty());
    let listed = call("GET", &agent.log.path("/history?kind=db_snapshot"))
        .send()
        .expect_json(200);
    let kept = listed["versions"][0]["version"]
        .as_u64()
        .expect("a kept version");
    let read = call("GET", &format!("{}?version={kept}", agent.path())).send();
    assert_eq!(read.status, 200);
    assert!(
        read.body == old.body,
        "the superseded version reads back whole"
    );
    assert_whole_file(&agent, &new.body);
}

#[test]
fn a_delete_collects_the_chunks_of_its_manifest() {
    let agent = SnapshotAgent::fresh("chunks-gc-delete");
    let split = Split::new(bytes(2 * CHUNK, 11));
    push(&agent, &split, None);
    assert_eq!(call("DELETE", &agent.path()).send().status, 204);
    for name in split.names() {
        assert_error(&get_chunk(&agent, &name), 404, "chunk_not_found");
    }
    assert_eq!(missing(&agent, &split.names()), split.names());
    let manifest = call("GET", &format!("{}/manifest", agent.path())).send();
    assert_error(&manifest, 404, "snapshot_not_found");
}

#[test]
fn an_uploaded_chunk_no_manifest_names_yet_is_kept_for_its_push() {
    let agent = SnapshotAgent::fresh("chunks-pending");
    let split = Split::new(bytes(CHUNK, 12));
    put_chunk(&agent, &split.names()[0], &split.chunks[0]);
    // A DELETE runs a collection; the pending chunk survives it.
    call("DELETE", &agent.path()).send();
    assert_eq!(get_chunk(&agent, &split.names()[0]).status, 200);
    assert_eq!(
        commit(&agent, &split.manifest(), None).status,
        201,
        "the pending chunk commits"
    );
}

#[test]
fn a_whole_file_snapshot_reads_through_the_delta_routes() {
    let agent = SnapshotAgent::fresh("chunks-whole-file");
    let body = bytes(3_000_000, 13);
    agent.store(body);
    let manifest = call("GET", &format!("{}/manifest", agent.path())).send();
    let manifest = manifest.expect_json(200);
    let mut assembled = Vec::new();
    for name in manifest["chunks"].as_array().into_iter().flatten() {
        let reply = get_chunk(&agent, name.as_str().unwrap_or_default());
        assert_eq!(reply.status, 200);
        assembled.extend_from_slice(&reply.body);
    }
    assert_same_bytes(&assembled, body);
    let small = SnapshotAgent::fresh("chunks-inline");
    small.store(b"tiny");
    let manifest = call("GET", &format!("{}/manifest", small.path())).send();
    let manifest = manifest.expect_json(200);
    assert_eq!(manifest["chunks"], json!([sha256_hex(b"tiny")]));
    assert_eq!(get_chunk(&small, &sha256_hex(b"tiny")).body, b"tiny");
}
