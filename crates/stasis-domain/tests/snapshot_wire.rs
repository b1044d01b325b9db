//! The chunk store's calls travel inside snapshot calls (the edge sends
//! them to the agent's Durable Object as JSON) in the very JSON they had
//! when they were snapshot calls of their own, so that a worker and an
//! object of either shape read each other; and each reply reads back as
//! the chunk step expects it.

#![allow(
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_used,
    reason = "tests fail loudly"
)]

use stasis_domain::{
    agent::{AgentCall, AgentReply},
    chunk_store::{
        ChunkCall, ChunkReply,
        claims::{Claim, Taken},
        operations as chunk_op,
    },
    operation::agent as agent_op,
    snapshot::{SnapshotCall, SnapshotReply, operations::chunk_step},
};

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("serializes")
}

#[test]
fn chunk_calls_keep_the_json_they_had_as_snapshot_calls() {
    let a = "a".repeat(64);
    let cases = [
        (
            ChunkCall::Missing {
                chunks: vec![a.clone()],
                pending_ttl_ms: 5,
            },
            format!(r#"{{"op":"missing","args":{{"chunks":["{a}"],"pending_ttl_ms":5}}}}"#),
        ),
        (
            ChunkCall::ClaimUploads {
                chunks: vec![a.clone()],
                pending_ttl_ms: 5,
                stale_before: 7,
            },
            format!(
                r#"{{"op":"claim_uploads","args":{{"chunks":["{a}"],"pending_ttl_ms":5,"stale_before":7}}}}"#
            ),
        ),
        (
            ChunkCall::RecordChunks {
                chunks: vec![(a.clone(), 3)],
                pending_ttl_ms: 5,
            },
            format!(
                r#"{{"op":"record_chunks","args":{{"chunks":[["{a}",3]],"pending_ttl_ms":5}}}}"#
            ),
        ),
        (
            ChunkCall::CollectTake {
                limit: 200,
                stale_before: 7,
            },
            r#"{"op":"collect_take","args":{"limit":200,"stale_before":7}}"#.to_owned(),
        ),
        (
            ChunkCall::CollectDone {
                chunks: vec![a.clone()],
                claim_at: 9,
            },
            format!(r#"{{"op":"collect_done","args":{{"chunks":["{a}"],"claim_at":9}}}}"#),
        ),
        (
            ChunkCall::ClaimOrphans {
                chunks: vec![a.clone()],
            },
            format!(r#"{{"op":"claim_orphans","args":{{"chunks":["{a}"]}}}}"#),
        ),
        (
            ChunkCall::StoredSizes {
                chunks: vec![a.clone()],
            },
            format!(r#"{{"op":"stored_sizes","args":{{"chunks":["{a}"]}}}}"#),
        ),
    ];
    for (call, expected) in cases {
        let snapshot_call = SnapshotCall::Chunk(call.clone());
        assert_eq!(json(&snapshot_call), expected);
        let back: SnapshotCall = serde_json::from_str(&expected).expect("reads");
        assert_eq!(back, snapshot_call);
        let agent_call = AgentCall::Snapshot(snapshot_call);
        let wrapped = format!(r#"{{"op":"snapshot","args":{expected}}}"#);
        assert_eq!(json(&agent_call), wrapped);
        let back: AgentCall = serde_json::from_str(&wrapped).expect("reads");
        assert_eq!(back, agent_call);
    }
}

#[test]
fn a_call_sent_without_its_defaults_reads_with_them() {
    let sent = r#"{"op":"claim_uploads","args":{"chunks":[]}}"#;
    let call: SnapshotCall = serde_json::from_str(sent).expect("reads");
    let SnapshotCall::Chunk(ChunkCall::ClaimUploads {
        pending_ttl_ms,
        stale_before,
        ..
    }) = call
    else {
        panic!("read as {call:?}");
    };
    assert_eq!((pending_ttl_ms, stale_before), (60 * 60 * 1000, 0));
}

#[test]
fn chunk_replies_keep_their_json_and_read_back_through_the_agent_reply() {
    let a = "a".repeat(64);
    let taken = Taken {
        chunks: vec![a.clone()],
        claim_at: 9,
    };
    let cases = [
        (
            ChunkReply::Chunks(vec![a.clone()]),
            format!(r#"{{"op":"chunks","args":["{a}"]}}"#),
        ),
        (
            ChunkReply::Claims(vec![Claim::Write, Claim::Held, Claim::Busy]),
            r#"{"op":"claims","args":["write","held","busy"]}"#.to_owned(),
        ),
        (
            ChunkReply::Taken(taken),
            format!(r#"{{"op":"taken","args":{{"chunks":["{a}"],"claim_at":9}}}}"#),
        ),
        (
            ChunkReply::Recorded(vec![true, false]),
            r#"{"op":"recorded","args":[true,false]}"#.to_owned(),
        ),
        (
            ChunkReply::Sizes(vec![Some(7), None]),
            r#"{"op":"sizes","args":[7,null]}"#.to_owned(),
        ),
        (ChunkReply::Done, r#"{"op":"done"}"#.to_owned()),
    ];
    for (reply, expected) in cases {
        let wrapped = AgentReply::Snapshot(SnapshotReply::Chunk(reply.clone()));
        let text = json(&wrapped);
        assert_eq!(text, format!(r#"{{"op":"snapshot","args":{expected}}}"#));
        let back: AgentReply = serde_json::from_str(&text).expect("reads");
        // Each reading of a chunk step takes the reply as it comes back.
        let read = |reply: AgentReply| {
            let (_, answer) = agent_op::snapshot(chunk_step(read_any())).split();
            answer.read(reply).expect("fits")
        };
        assert_eq!(read(back), reply);
    }
}

/// A chunk operation whose reading takes any chunk reply.
fn read_any() -> chunk_op::ChunkOperation<ChunkReply> {
    stasis_domain::typed_operation::Operation::new(
        "any",
        ChunkCall::ClaimOrphans { chunks: Vec::new() },
        Some,
    )
}
