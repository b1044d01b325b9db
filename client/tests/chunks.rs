//! The delta push and the chunked pull against a mock server that speaks the chunk protocol:
//! what goes over the wire, the 409 `chunks_missing` round, the chunk cache, and the fallback
//! to the whole file against a server without the chunk routes.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::json;
use sha2::Digest;
use stasis_client::AgentRef;
use stasis_client::snapshot::{
    ChunkCache, ChunkedFile, PullOptions, PullOutcome, PulledSnapshot, PushOptions, TransferMode,
    pull, push, upload_file,
};
use support::{Mock, Request, Response, entries};

fn mayor() -> AgentRef {
    AgentRef::new("t1", "hq", "mayor").expect("ids")
}

fn sha_of(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// A database of about 1.5 MB: 46 chunks of 32 KiB (above the size pushed whole).
fn multi_chunk_db(dir: &Path) -> PathBuf {
    let path = dir.join("kilo.db");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6500)
         INSERT INTO t (v) SELECT printf('%0200d', i) FROM n;",
    )
    .expect("fill");
    path
}

/// A server that holds the chunks in `held` and commits a manifest once it holds them all;
/// the first commit is answered 409 naming `withheld` (as if collected meanwhile).
struct ChunkServer {
    held: Mutex<HashMap<String, Vec<u8>>>,
    withheld: Mutex<Option<String>>,
}

impl ChunkServer {
    fn answer(&self, request: &Request) -> Response {
        let path = request.path();
        let held = || self.held.lock().expect("lock");
        if path.ends_with("/db-snapshot/missing") {
            let asked = request.json()["chunks"].clone();
            let held = held();
            let missing: Vec<&serde_json::Value> = asked
                .as_array()
                .expect("chunks")
                .iter()
                .filter(|c| !held.contains_key(c.as_str().expect("hex")))
                .collect();
            return Response::json(200, &json!({ "missing": missing }));
        }
        if let Some(sha) = path.split("/db-snapshot/chunks/").nth(1) {
            assert_eq!(
                sha_of(&request.body),
                sha,
                "each chunk is sent under its hash"
            );
            held().insert(sha.to_owned(), request.body.clone());
            return Response::json(201, &json!({"sha256": sha, "size": request.body.len()}));
        }
        if path.ends_with("/db-snapshot/manifest") {
            let manifest = request.json();
            if let Some(sha) = self.withheld.lock().expect("lock").take() {
                held().remove(&sha);
                return Response::json(
                    409,
                    &json!({"error": {"code": "chunks_missing", "message": "m",
                                      "missing": [sha]}}),
                );
            }
            let held = held();
            for chunk in manifest["chunks"].as_array().expect("chunks") {
                assert!(held.contains_key(chunk.as_str().expect("hex")));
            }
            return Response::json(
                201,
                &json!({"version": 2, "sha256": manifest["sha256"], "size": manifest["size"],
                        "storage": "kv", "event_watermark": manifest["event_watermark"],
                        "chunk_size": manifest["chunk_size"],
                        "chunk_count": manifest["chunks"].as_array().map(Vec::len)}),
            )
            .header(
                "ETag",
                &format!("\"{}\"", manifest["sha256"].as_str().expect("sha")),
            );
        }
        Response::error(404, "not_found", "no such route")
    }
}

#[test]
fn a_push_sends_only_missing_chunks_and_those_a_409_names_then_commits() {
    let dir = tempfile::tempdir().expect("dir");
    let db = multi_chunk_db(dir.path());
    let scanned = ChunkedFile::scan(&db).expect("scan");
    assert!(scanned.chunks.len() > 10, "{}", scanned.chunks.len());
    // The server already holds every chunk but the first three; the commit's 409 then names
    // the fifth, which it "collected".
    let held: HashMap<String, Vec<u8>> = scanned.chunks[3..]
        .iter()
        .map(|c| (c.clone(), Vec::new()))
        .collect();
    let server = std::sync::Arc::new(ChunkServer {
        held: Mutex::new(held),
        withheld: Mutex::new(Some(scanned.chunks[4].clone())),
    });
    let handler = std::sync::Arc::clone(&server);
    let mock = Mock::start(move |r| handler.answer(r));
    let options = PushOptions {
        event_seq: Some(11),
        if_match: Some("e1".into()),
        ..PushOptions::default()
    };
    let receipt = upload_file(&mock.client(), &mayor(), &db, &scanned, &options).expect("push");

    let transfer = receipt.transfer.expect("transfer");
    assert_eq!(transfer.mode, TransferMode::Chunks);
    assert_eq!(transfer.chunks_total, scanned.chunks.len() as u64);
    assert_eq!(
        transfer.chunks_sent, 4,
        "three missing, then the one the 409 named"
    );
    assert_eq!(transfer.bytes_sent, 4 * 32 * 1024);
    assert_eq!(
        (receipt.version, receipt.sha256),
        (2, scanned.sha256.clone())
    );
    let requests = mock.requests();
    let shape: Vec<String> = requests
        .iter()
        .map(|r| {
            let tail = r.path().rsplit('/').next().unwrap_or_default();
            format!(
                "{} {}",
                r.method,
                if tail.len() == 64 { "chunk" } else { tail }
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            "POST missing",
            "PUT chunk",
            "PUT chunk",
            "PUT chunk",
            "PUT manifest",
            "PUT chunk",
            "PUT manifest"
        ]
    );
    let commit = requests.last().expect("commit");
    assert_eq!(commit.header("if-match"), Some("\"e1\""));
    let manifest = commit.json();
    assert_eq!(manifest["event_watermark"], 11);
    assert_eq!(manifest["chunk_size"], 32 * 1024);
    assert_eq!(manifest["chunks"], json!(scanned.chunks));
}

#[test]
fn a_server_without_the_chunk_routes_gets_the_whole_file() {
    let dir = tempfile::tempdir().expect("dir");
    let db = multi_chunk_db(dir.path());
    let mock = Mock::start(|request: &Request| {
        if request.method != "PUT" {
            return Response::error(404, "not_found", "no such route");
        }
        let sha = sha_of(&request.body);
        Response::json(
            201,
            &json!({"version": 1, "sha256": sha, "size": request.body.len(), "storage": "kv"}),
        )
    });
    let receipt = push(&mock.client(), &mayor(), &db, &PushOptions::default()).expect("push");
    let transfer = receipt.transfer.expect("transfer");
    assert_eq!(transfer.mode, TransferMode::WholeFile);
    assert_eq!(transfer.bytes_sent, receipt.size);
    let methods: Vec<String> = mock.requests().into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["POST", "PUT"]);
    assert!(mock.requests()[1].path().ends_with("/db-snapshot"));
}

/// A server holding one chunked snapshot of `db`: its manifest and its chunks.
fn serving(db: &Path) -> (Mock, ChunkedFile) {
    let bytes = std::fs::read(db).expect("read");
    let scanned = ChunkedFile::scan(db).expect("scan");
    let chunks: HashMap<String, Vec<u8>> = bytes
        .chunks(32 * 1024)
        .map(|c| (sha_of(c), c.to_vec()))
        .collect();
    let manifest = json!({"version": 4, "sha256": scanned.sha256, "size": scanned.size,
                          "chunk_size": scanned.chunk_size, "chunks": scanned.chunks,
                          "storage": "kv", "event_watermark": 30, "created_at": 1});
    let mock = Mock::start(move |request: &Request| {
        let path = request.path();
        if path.ends_with("/db-snapshot/manifest") {
            return Response::json(200, &manifest);
        }
        match path
            .split("/db-snapshot/chunks/")
            .nth(1)
            .and_then(|sha| chunks.get(sha))
        {
            Some(bytes) => Response::new(200).body(bytes.clone()),
            None => Response::error(404, "chunk_not_found", "no such chunk"),
        }
    });
    (mock, scanned)
}

fn pulled(outcome: PullOutcome) -> PulledSnapshot {
    match outcome {
        PullOutcome::Pulled(pulled) => pulled,
        PullOutcome::NoSnapshot => panic!("expected a snapshot"),
    }
}

#[test]
fn a_pull_fetches_each_chunk_once_and_a_second_pull_takes_them_from_the_cache() {
    let dir = tempfile::tempdir().expect("dir");
    let db = multi_chunk_db(dir.path());
    let (mock, scanned) = serving(&db);
    let cache = ChunkCache::new(dir.path().join("cache"), 1 << 30);
    let options = PullOptions {
        cache: Some(cache.clone()),
        ..PullOptions::default()
    };
    let total = scanned.chunks.len() as u64;

    let first = dir.path().join("a/kilo.db");
    let one = pulled(pull(&mock.client(), &mayor(), &first, &options).expect("pull"));
    let transfer = one.transfer.expect("transfer");
    assert_eq!(
        (
            transfer.chunks_total,
            transfer.chunks_fetched,
            transfer.chunks_cached
        ),
        (total, total, 0)
    );
    assert_eq!((one.version, one.event_seq), (Some(4), Some(30)));
    assert_eq!(
        std::fs::read(&first).expect("read"),
        std::fs::read(&db).expect("read")
    );
    assert_eq!(entries(&dir.path().join("a")), ["kilo.db"]);
    assert_eq!(mock.requests().len() as u64, 1 + total);

    // A rotten cache entry is noticed, removed, and fetched again; the rest come from the cache.
    let rotten = cache.dir().join(&scanned.chunks[2]);
    let mut bytes = std::fs::read(&rotten).expect("entry");
    bytes[100] ^= 1;
    std::fs::write(&rotten, bytes).expect("rot");
    let second = dir.path().join("b/kilo.db");
    let two = pulled(pull(&mock.client(), &mayor(), &second, &options).expect("pull"));
    let transfer = two.transfer.expect("transfer");
    assert_eq!(
        (
            transfer.chunks_fetched,
            transfer.chunks_cached,
            transfer.cache_rejected
        ),
        (1, total - 1, 1)
    );
    assert_eq!(two.sha256, scanned.sha256);
    assert_eq!(mock.requests().len() as u64, 1 + total + 2);
    assert_eq!(
        sha_of(&std::fs::read(&rotten).expect("entry")),
        scanned.chunks[2]
    );
}

#[test]
fn a_chunk_that_does_not_hash_to_its_name_fails_the_pull_and_leaves_the_old_file() {
    let dir = tempfile::tempdir().expect("dir");
    let db = multi_chunk_db(dir.path());
    let scanned = ChunkedFile::scan(&db).expect("scan");
    let manifest = json!({"version": 1, "sha256": scanned.sha256, "size": scanned.size,
                          "chunk_size": scanned.chunk_size, "chunks": scanned.chunks});
    let mock = Mock::start(move |request: &Request| {
        if request.path().ends_with("/manifest") {
            Response::json(200, &manifest)
        } else {
            Response::new(200).body(vec![0u8; 32 * 1024])
        }
    });
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("dir");
    std::fs::write(home.join("kilo.db"), b"the old database").expect("old");
    let error = pull(
        &mock.client(),
        &mayor(),
        &home.join("kilo.db"),
        &PullOptions::default(),
    )
    .expect_err("wrong bytes");
    assert_eq!(error.exit_code(), stasis_client::exit::INTEGRITY, "{error}");
    assert_eq!(
        std::fs::read(home.join("kilo.db")).expect("read"),
        b"the old database"
    );
    assert_eq!(entries(&home), ["kilo.db"]);
}

#[test]
fn a_server_without_the_manifest_route_is_pulled_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let db = multi_chunk_db(dir.path());
    let bytes = std::fs::read(&db).expect("read");
    let sha = sha_of(&bytes);
    let mock = Mock::start(move |request: &Request| {
        if request.path().ends_with("/db-snapshot") {
            Response::new(200)
                .header("X-Stasis-Sha256", &sha)
                .header("X-Stasis-Snapshot-Version", "3")
                .body(bytes.clone())
        } else {
            Response::error(404, "not_found", "no such route")
        }
    });
    let out = dir.path().join("out/kilo.db");
    let one = pulled(pull(&mock.client(), &mayor(), &out, &PullOptions::default()).expect("pull"));
    assert_eq!(one.transfer.map(|t| t.mode), Some(TransferMode::WholeFile));
    assert_eq!(one.version, Some(3));
    assert_eq!(
        std::fs::read(&out).expect("read"),
        std::fs::read(&db).expect("read")
    );
}
