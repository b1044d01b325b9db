//! An import in parts: `PUT /import?import_id=&part=` stages part after
//! part (202), the last with `&commit=true` replaces the agent (200). Parts
//! come in order; a refused part ends the import and changes nothing; the
//! agent stays as it was until the commit.
#![allow(
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::town::Agent;
use stasis_conformance::{Reply, Value, assert_error, call, json};

fn part(agent: &Agent, query: &str, body: &Value) -> Reply {
    call("PUT", &agent.path(&format!("/import?{query}")))
        .json(body)
        .send()
}

fn event(seq: u64) -> Value {
    json!({"seq": seq, "type": "moved", "data": {"seq": seq}})
}

fn populated(case: &str) -> Agent {
    let agent = Agent::fresh(case);
    agent.register("polecat");
    agent.log.append(json!([{"type": "old", "data": 1}]));
    agent.put_memory("old", &json!(true));
    agent
}

#[test]
fn parts_stage_in_order_and_the_last_one_commits() {
    let agent = populated("parts-commit");
    let before = agent.state();
    let first = part(
        &agent,
        "import_id=m-1&part=1",
        &json!({"agent": {"role": "refinery"}, "events": [event(1), event(2)]}),
    )
    .expect_json(202);
    assert_eq!(
        first,
        json!({"import_id": "m-1", "part": 1, "staged": {"parts": 1, "events": 2, "sessions": 0, "memory": 0}})
    );
    agent.assert_unchanged(&before);
    part(
        &agent,
        "import_id=m-1&part=2",
        &json!({"events": [event(5)]}),
    )
    .expect_json(202);
    let summary = part(
        &agent,
        "import_id=m-1&part=3&commit=true",
        &json!({"memory": [{"key": "new", "value": 1}]}),
    )
    .ok();
    assert_eq!(
        summary,
        json!({"events": 3, "sessions": 0, "memory": 1, "checkpoint": false, "snapshot": false})
    );
    assert_eq!(agent.record()["role"], json!("refinery"));
    assert_eq!(agent.memory_keys(""), vec!["new"]);
    let over = part(&agent, "import_id=m-1&part=4", &json!({}));
    assert_error(&over, 404, "import_not_found");
}

#[test]
fn parts_out_of_order_or_of_an_unknown_import_are_refused() {
    let agent = populated("parts-order");
    let before = agent.state();
    part(
        &agent,
        "import_id=m-2&part=1",
        &json!({"events": [event(1)]}),
    )
    .expect_json(202);
    let skipped = part(&agent, "import_id=m-2&part=3", &json!({}));
    assert_error(&skipped, 409, "import_part_out_of_order");
    let repeated = part(
        &agent,
        "import_id=m-2&part=1",
        &json!({"events": [event(9)]}),
    );
    assert_eq!(repeated.status, 202, "part 1 begins the import afresh");
    let unknown = part(&agent, "import_id=other&part=2", &json!({}));
    assert_error(&unknown, 404, "import_not_found");
    agent.assert_unchanged(&before);
    for query in [
        "import_id=m-2",
        "part=2",
        "commit=true",
        "import_id=m-2&part=0",
        "import_id=m-2&part=2&commit=yes",
        "import_id=no%20spaces&part=1",
    ] {
        let reply = part(&agent, query, &json!({}));
        assert_eq!(reply.status, 400, "{query}: {}", reply.text());
    }
    agent.assert_unchanged(&before);
}

#[test]
fn a_refused_part_ends_the_import_and_changes_nothing() {
    let agent = populated("parts-refused");
    let before = agent.state();
    part(
        &agent,
        "import_id=m-3&part=1",
        &json!({"events": [event(4)]}),
    )
    .expect_json(202);
    let refused = part(
        &agent,
        "import_id=m-3&part=2",
        &json!({"events": [event(3)]}),
    );
    let error = assert_error(&refused, 400, "invalid_manifest");
    assert_eq!(
        error["message"],
        json!("events[1].seq: must be above the previous event's seq 4")
    );
    let after = part(&agent, "import_id=m-3&part=3&commit=true", &json!({}));
    assert_error(&after, 404, "import_not_found");
    agent.assert_unchanged(&before);
}

#[test]
fn a_whole_import_supersedes_one_in_parts() {
    let agent = populated("parts-superseded");
    part(
        &agent,
        "import_id=m-4&part=1",
        &json!({"events": [event(1)]}),
    )
    .expect_json(202);
    agent.import_reply(&json!({"events": [event(7)]})).ok();
    let late = part(&agent, "import_id=m-4&part=2&commit=true", &json!({}));
    assert_error(&late, 404, "import_not_found");
    let seqs: Vec<Value> = agent.log.read("after=6")["events"]
        .as_array()
        .unwrap_or_else(|| panic!("events"))
        .iter()
        .map(|e| e["seq"].clone())
        .collect();
    assert_eq!(seqs, vec![json!(7)]);
}
