//! Concurrent appends: one agent's appends are serialised, so racing writers
//! get every seq exactly once with no gaps and each batch stays contiguous;
//! different agents count their seqs independently.
#![allow(
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use std::collections::BTreeMap;
use std::sync::Barrier;

use stasis_conformance::{AgentLog, Value, json, num, seqs};

const THREADS: u64 = 8;
const APPENDS: u64 = 25;
const PER_BATCH: u64 = 2;

#[test]
fn racing_appends_to_one_agent_get_every_seq_once() {
    let log = AgentLog::fresh("race-one-agent");
    let barrier = Barrier::new(usize::try_from(THREADS).expect("small"));
    let replies: Vec<(u64, u64, Value)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let (log, barrier) = (&log, &barrier);
                scope.spawn(move || {
                    barrier.wait();
                    (0..APPENDS)
                        .map(|n| {
                            let events: Vec<Value> = (0..PER_BATCH)
                                .map(|i| json!({"type": "race", "data": {"t": thread, "n": n, "i": i}}))
                                .collect();
                            (thread, n, log.append(Value::Array(events)))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("an appending thread finishes"))
            .collect()
    });
    let total = THREADS * APPENDS * PER_BATCH;
    let page = log.read("limit=10000");
    assert_eq!(seqs(&page), (1..=total).collect::<Vec<u64>>());
    assert_eq!(page["last_seq"], json!(total));
    let by_seq: BTreeMap<u64, Value> = page["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .map(|e| (num(e, "seq"), e["data"].clone()))
                .collect()
        })
        .unwrap_or_default();
    for (thread, n, reply) in replies {
        let first = num(&reply, "first_seq");
        assert_eq!(
            num(&reply, "last_seq"),
            first + PER_BATCH - 1,
            "a batch is contiguous"
        );
        for i in 0..PER_BATCH {
            let expected = json!({"t": thread, "n": n, "i": i});
            assert_eq!(
                by_seq.get(&(first + i)),
                Some(&expected),
                "the batch sits at its seqs"
            );
        }
    }
}

#[test]
fn appends_to_different_agents_are_independent() {
    let town = AgentLog::fresh("race-agents");
    let agents: Vec<AgentLog> = (0..4)
        .map(|i| town.sibling(&format!("agent-{i}")))
        .collect();
    std::thread::scope(|scope| {
        for agent in &agents {
            scope.spawn(move || {
                for n in 0..10_u64 {
                    let reply = agent.append(json!([{"type": "x", "data": n}]));
                    assert_eq!(reply["first_seq"], json!(n + 1), "each agent counts from 1");
                }
            });
        }
    });
    for agent in &agents {
        assert_eq!(seqs(&agent.read("")), (1..=10).collect::<Vec<u64>>());
    }
}
