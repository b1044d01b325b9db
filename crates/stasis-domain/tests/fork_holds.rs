//! The chunk store's side of forks, on real SQLite: an origin keeps what
//! a fork holds from collection and across its own wipe until the hold
//! is released; a hold names only chunks the origin has; a fork's adopted
//! chunks answer their origin, count as held for its uploads, and lose
//! their origin once collected.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test fails loudly, naming what broke"
)]

use stasis_domain::{
    DomainError,
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    chunk_store::{ChunkCall, ChunkReply, claims::Claim, sha256_hex},
    history::RetentionPolicy,
    limits,
    snapshot::{SnapshotCall, SnapshotReply},
    sql::SqlStore as _,
};
use stasis_sqlite::SqliteStore;

const NOW: i64 = 1_700_000_000_000;

fn store() -> SqliteStore {
    let store = SqliteStore::in_memory().expect("sqlite");
    agent::migrate(&store).expect("schema");
    store
}

fn try_chunk(store: &SqliteStore, at: i64, call: ChunkCall) -> Result<ChunkReply, DomainError> {
    let env = ObjectEnv {
        now_ms: NOW + at,
        max_events: limits::DEFAULT_MAX_EVENTS,
        retention: RetentionPolicy::parse("0").expect("policy"),
    };
    // Atomic, as both runtimes run a call: a refused one changes nothing.
    store.run("SAVEPOINT call", Vec::new()).expect("savepoint");
    let answer = agent::execute(store, &AgentCall::Snapshot(SnapshotCall::Chunk(call)), &env);
    if answer.is_err() {
        store.run("ROLLBACK TO call", Vec::new()).expect("rollback");
    }
    store.run("RELEASE call", Vec::new()).expect("release");
    match answer? {
        AgentReply::Snapshot(SnapshotReply::Chunk(reply)) => Ok(reply),
        other => panic!("not a chunk reply: {other:?}"),
    }
}

fn chunk(store: &SqliteStore, at: i64, call: ChunkCall) -> ChunkReply {
    let text = format!("{call:?}");
    try_chunk(store, at, call).unwrap_or_else(|err| panic!("{text}: {err:?}"))
}

/// Stores chunks as an upload does (claim, then record), kept 1 s.
fn upload(store: &SqliteStore, names: &[String]) {
    chunk(
        store,
        0,
        ChunkCall::ClaimUploads {
            chunks: names.to_vec(),
            pending_ttl_ms: 1_000,
            stale_before: 0,
        },
    );
    chunk(
        store,
        0,
        ChunkCall::RecordChunks {
            chunks: names.iter().map(|n| (n.clone(), 10)).collect(),
            pending_ttl_ms: 1_000,
        },
    );
}

/// What a collection at `at` takes (and finishes).
fn collect(store: &SqliteStore, at: i64) -> Vec<String> {
    let ChunkReply::Taken(taken) = chunk(
        store,
        at,
        ChunkCall::CollectTake {
            limit: 100,
            stale_before: 0,
        },
    ) else {
        panic!("not taken");
    };
    chunk(
        store,
        at,
        ChunkCall::CollectDone {
            chunks: taken.chunks.clone(),
            claim_at: taken.claim_at,
        },
    );
    let mut went = taken.chunks;
    went.sort();
    went
}

fn names() -> Vec<String> {
    let mut names: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|s| sha256_hex(s.as_bytes()))
        .collect();
    names.sort();
    names
}

#[test]
fn an_origin_keeps_what_a_fork_holds_until_it_is_released() {
    let origin = store();
    let names = names();
    upload(&origin, &names);
    chunk(
        &origin,
        0,
        ChunkCall::Hold {
            holder: "r2/fork".into(),
            chunks: names[..2].to_vec(),
        },
    );
    // Past the pending time, only the chunk no hold names goes.
    assert_eq!(collect(&origin, 5_000), vec![names[2].clone()]);
    // The origin is wiped (destroyed): what the hold names stays.
    let wiped = agent::execute(
        &origin,
        &AgentCall::Snapshot(SnapshotCall::Wipe),
        &ObjectEnv {
            now_ms: NOW + 6_000,
            max_events: limits::DEFAULT_MAX_EVENTS,
            retention: RetentionPolicy::parse("0").expect("policy"),
        },
    );
    assert!(wiped.is_ok(), "{wiped:?}");
    assert_eq!(
        collect(&origin, 7_000),
        Vec::<String>::new(),
        "held across a wipe"
    );
    let ChunkReply::Existed(true) = chunk(
        &origin,
        8_000,
        ChunkCall::ReleaseHold {
            holder: "r2/fork".into(),
            grace_ms: 0,
        },
    ) else {
        panic!("the hold existed");
    };
    assert_eq!(
        collect(&origin, 9_000),
        names[..2].to_vec(),
        "released, collected"
    );
}

#[test]
fn a_hold_names_only_chunks_the_origin_has() {
    let origin = store();
    let names = names();
    upload(&origin, &names[..1]);
    let refused = try_chunk(
        &origin,
        0,
        ChunkCall::Hold {
            holder: "r2/fork".into(),
            chunks: names.clone(),
        },
    );
    assert!(
        matches!(refused, Err(DomainError::ChunksMissing { .. })),
        "{refused:?}"
    );
    // Nothing changed: the held one still goes once pending ends.
    assert_eq!(collect(&origin, 5_000), names[..1].to_vec());
}

#[test]
fn adopted_chunks_name_their_origin_and_count_as_held() {
    let fork = store();
    let names = names();
    chunk(
        &fork,
        0,
        ChunkCall::Adopt {
            chunks: names[..2]
                .iter()
                .map(|n| (n.clone(), 10, "r/source".to_owned()))
                .collect(),
            pending_ttl_ms: 1_000,
        },
    );
    let ChunkReply::Located(located) = chunk(
        &fork,
        0,
        ChunkCall::Located {
            chunks: names.clone(),
        },
    ) else {
        panic!("not located");
    };
    assert_eq!(
        located,
        vec![
            Some((10, Some("r/source".to_owned()))),
            Some((10, Some("r/source".to_owned()))),
            None
        ]
    );
    let ChunkReply::Claims(claims) = chunk(
        &fork,
        0,
        ChunkCall::ClaimUploads {
            chunks: names.clone(),
            pending_ttl_ms: 1_000,
            stale_before: 0,
        },
    ) else {
        panic!("not claims");
    };
    assert_eq!(claims, vec![Claim::Held, Claim::Held, Claim::Write]);
    // Collected (nothing names them): their origin goes with the row.
    assert_eq!(collect(&fork, 5_000), names);
    let ChunkReply::Located(located) = chunk(&fork, 6_000, ChunkCall::Located { chunks: names })
    else {
        panic!("not located");
    };
    assert_eq!(located, vec![None, None, None]);
}
