//! Export and import of an agent past 64 MB: 70 events of about 1 MB, with
//! sessions, memory, a checkpoint and a snapshot above the inline limit.
//! The export streams, the import streams (whole, or in parts as the edge's
//! request-body limit needs), and what is read back matches byte for byte;
//! a large manifest refused near its end leaves the agent as it was.
//!
//! These cases move about 75 MB per request; they take seconds on the host
//! and tens of seconds under `wrangler dev`. They are ignored in a plain
//! run: `scripts/test` runs them (`--ignored`) with the 100 MB snapshots,
//! against a server that serves nothing else at the time. Under `wrangler
//! dev --local` every Durable Object shares one workerd thread, and in the
//! parallel suite an export of this size, beside other cases, got no answer
//! within the client's 120 s (CI, and one local run of the edge suite),
//! and the liveness case beside it saw its 10 s window pass.
#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "a conformance case fails loudly, naming what broke"
)]

use serde_json::value::RawValue;
use stasis_conformance::town::{Agent, Kilo, Town};
use stasis_conformance::{Reply, assert_error, call, json, num, on_edge};

/// Events appended, each about [`EVENT_BYTES`] of data.
const EVENTS: usize = 70;
const EVENT_BYTES: usize = 1_000_000;
/// Above the 1 MiB inline limit, so the snapshot lives in KV.
const SNAPSHOT_BYTES: usize = 3 * 1024 * 1024 + 17;

/// The two cases that move 75 MB take turns. Under `wrangler dev --local`,
/// two such transfers at once lost a connection inside workerd ("Network
/// connection lost", which wrangler's proxy answers as 503 "Your worker
/// restarted mid-request") in 2 of 6 runs; taking turns, 0 of 4.
static ONE_LARGE_TRANSFER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_LARGE_TRANSFER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The JSON text of event `i`'s data: about 1 MB of text with escapes and
/// non-ASCII, different for every event.
fn event_data(i: usize) -> String {
    let mut text = String::with_capacity(EVENT_BYTES + 64);
    text.push_str(&format!(r#"{{"i":{i},"unicode":"\u00e9 é ✓","text":""#));
    let mut state = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    while text.len() < EVENT_BYTES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        match state % 64 {
            0 => text.push_str(r#"\""#),
            1 => text.push_str(r"\n"),
            n => text.push(char::from(b'a' + (n % 26) as u8)),
        }
    }
    text.push_str(r#""}"#);
    text
}

/// Appends the events four at a time (an append takes 4 MiB), half of
/// them in session `s1`, the rest in `s2`.
fn append_events(agent: &Agent) -> Vec<String> {
    let datas: Vec<String> = (0..EVENTS).map(event_data).collect();
    for (batch, chunk) in datas.chunks(4).enumerate() {
        let events: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(k, data)| {
                let session = if (batch * 4 + k) < EVENTS / 2 {
                    "s1"
                } else {
                    "s2"
                };
                format!(r#"{{"type":"chunk","session_id":"{session}","data":{data}}}"#)
            })
            .collect();
        let body = format!(r#"{{"events":[{}]}}"#, events.join(","));
        let reply = call("POST", &agent.path("/events"))
            .header("Content-Type", "application/json")
            .body(body)
            .send();
        assert_eq!(reply.status, 200, "append: {}", reply.text());
    }
    datas
}

/// A mayor with everything: record, events, sessions, checkpoint, memory
/// and a KV-sized snapshot. Returns the events' data and the snapshot.
fn populate(agent: &Agent) -> (Vec<String>, Kilo) {
    agent
        .register_reply(&json!({"role": "polecat", "metadata": {"bead": "gt-70"}}))
        .expect_json(201);
    let datas = append_events(agent);
    call("PUT", &agent.path("/sessions/s1"))
        .json(&json!({"status": "completed", "metadata": {"exit": 0}}))
        .send()
        .ok();
    agent.put_checkpoint(&json!({"step": 70, "notes": "ü".repeat(10_000)}));
    agent.put_memory("plan", &json!(["export", "import", "compare"]));
    agent.put_memory("big", &json!("m".repeat(500_000)));
    let snapshot = Kilo::random(SNAPSHOT_BYTES, 70);
    agent.put_snapshot(&snapshot.bytes, EVENTS as u64);
    (datas, snapshot)
}

fn export_bytes(agent: &Agent) -> Vec<u8> {
    let mut reply = call("GET", &agent.path("/export")).patient().send();
    // Should workerd lose the connection anyway (see above), wrangler's proxy
    // says so in a 503: an export is a read, so it is asked again.
    for _ in 0..2 {
        if !(on_edge() && reply.status == 503 && reply.text().contains("restarted mid-request")) {
            break;
        }
        reply = call("GET", &agent.path("/export")).patient().send();
    }
    assert_eq!(reply.status, 200, "export: {}", reply.text());
    assert!(
        reply.body.len() > 64 * 1024 * 1024,
        "a manifest past 64 MB: {} bytes",
        reply.body.len()
    );
    reply.body
}

fn import(agent: &Agent, query: &str, body: Vec<u8>) -> Reply {
    call("PUT", &agent.path(&format!("/import{query}")))
        .patient()
        .header("Content-Type", "application/json")
        .header("Expect", "")
        .body(body)
        .send()
}

/// The manifest's fields as their exact JSON text.
#[derive(serde::Deserialize)]
struct RawManifest<'a> {
    #[serde(borrow)]
    agent: &'a RawValue,
    #[serde(borrow)]
    sessions: &'a RawValue,
    #[serde(borrow)]
    events: Vec<&'a RawValue>,
    #[serde(borrow)]
    checkpoint: &'a RawValue,
    #[serde(borrow)]
    memory: &'a RawValue,
    #[serde(borrow)]
    snapshot: &'a RawValue,
}

/// The manifest cut into three parts that together hold it whole.
fn parts(manifest: &[u8]) -> [Vec<u8>; 3] {
    let raw: RawManifest<'_> = serde_json::from_slice(manifest).expect("a manifest");
    let events = |range: std::ops::Range<usize>| {
        let texts: Vec<&str> = raw.events[range].iter().map(|e| e.get()).collect();
        texts.join(",")
    };
    let half = raw.events.len() / 2;
    [
        format!(
            r#"{{"format":"stasis.agent.v1","agent":{},"sessions":{},"events":[{}]}}"#,
            raw.agent.get(),
            raw.sessions.get(),
            events(0..half)
        ),
        format!(r#"{{"events":[{}]}}"#, events(half..raw.events.len())),
        format!(
            r#"{{"checkpoint":{},"memory":{},"snapshot":{}}}"#,
            raw.checkpoint.get(),
            raw.memory.get(),
            raw.snapshot.get()
        ),
    ]
    .map(String::into_bytes)
}

/// Every event's data as the log serves it, as exact JSON text.
fn read_back_datas(agent: &Agent) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Page {
        events: Vec<RawEvent>,
        next_after: u64,
        has_more: bool,
    }
    #[derive(serde::Deserialize)]
    struct RawEvent {
        data: Box<RawValue>,
    }
    let mut datas = Vec::new();
    let mut after = 0;
    for _ in 0..EVENTS + 1 {
        let reply = call("GET", &agent.path(&format!("/events?after={after}"))).send();
        assert_eq!(reply.status, 200, "read: {}", reply.text());
        let page: Page = serde_json::from_slice(&reply.body).expect("a page");
        datas.extend(page.events.into_iter().map(|e| e.data.get().to_owned()));
        if !page.has_more {
            return datas;
        }
        after = page.next_after;
    }
    panic!("paging never ended")
}

fn assert_same_agent(copy: &Agent, manifest: &[u8], datas: &[String], snapshot: &Kilo) {
    assert!(
        export_bytes(copy) == manifest,
        "the copy exports the same manifest, byte for byte"
    );
    assert!(
        read_back_datas(copy) == datas,
        "every event's data, verbatim"
    );
    let served = copy.snapshot_reply();
    assert_eq!(served.status, 200);
    assert_eq!(
        served.header("x-stasis-sha256"),
        Some(snapshot.sha256.as_str())
    );
    assert!(served.body == snapshot.bytes, "the snapshot's bytes");
    let record = copy.record();
    assert_eq!(record["role"], json!("polecat"));
    assert_eq!(num(&record, "event_count"), EVENTS as u64);
    assert_eq!(record["snapshot"]["storage"], json!("kv"));
}

#[test]
#[ignore = "moves 75 MB: scripts/test runs it alone, with the 100 MB snapshots"]
fn an_agent_past_64_mb_moves_whole_and_in_parts_byte_for_byte() {
    let _turn = take_turn();
    let source = Agent::fresh("large-source");
    let (datas, snapshot) = populate(&source);
    let manifest = export_bytes(&source);

    let whole = Town::fresh("large-whole").agent("rig-1", "copy");
    let answer = import(&whole, "", manifest.clone()).ok();
    assert_eq!(
        answer,
        json!({"events": EVENTS, "sessions": 2, "memory": 2, "checkpoint": true, "snapshot": true})
    );
    assert_same_agent(&whole, &manifest, &datas, &snapshot);

    let parted = Town::fresh("large-parts").agent("rig-1", "copy");
    let [first, second, last] = parts(&manifest);
    let staged = import(&parted, "?import_id=move-1&part=1", first).expect_json(202);
    assert_eq!(staged["staged"]["events"], json!(EVENTS / 2));
    assert_error(&parted.record_reply(), 404, "agent_not_found");
    import(&parted, "?import_id=move-1&part=2", second).expect_json(202);
    let answer = import(&parted, "?import_id=move-1&part=3&commit=true", last).ok();
    assert_eq!(answer["events"], json!(EVENTS));
    assert_same_agent(&parted, &manifest, &datas, &snapshot);
}

#[test]
#[ignore = "moves 75 MB: scripts/test runs it alone, with the 100 MB snapshots"]
fn a_large_manifest_refused_near_its_end_changes_nothing() {
    let _turn = take_turn();
    let source = Agent::fresh("large-refused-source");
    populate(&source);
    let manifest = String::from_utf8(export_bytes(&source)).expect("UTF-8");
    // The snapshot first, so that it is staged before the refusal, and the
    // last event's seq equal to the one before it.
    let at = manifest.rfind(r#","snapshot":"#).expect("a snapshot field");
    let snapshot = &manifest[at + 1..manifest.len() - 1];
    let last = format!(r#"{{"seq":{EVENTS},"#);
    let bad_seq = format!(r#"{{"seq":{},"#, EVENTS - 1);
    let body = format!("{{{snapshot},{}}}", &manifest[1..at]).replacen(&last, &bad_seq, 1);

    let target = Agent::fresh("large-refused-target");
    target.register("refinery");
    target
        .log
        .append(json!([{"type": "before", "data": {"n": 1}}]));
    target.put_memory("kept", &json!("from before"));
    target.put_snapshot(&Kilo::random(2 * 1024 * 1024, 5).bytes, 1);
    let before = target.state();
    let reply = import(&target, "", body.into_bytes());
    let error = assert_error(&reply, 400, "invalid_manifest");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("events[{}].seq", EVENTS - 1)),
        "{message}"
    );
    target.assert_unchanged(&before);
    let again = import(&target, "", br#"{"agent":{"role":"refinery"}}"#.to_vec()).ok();
    assert_eq!(again["events"], json!(0), "nothing staged is left over");
}

/// A manifest refused at its first field while megabytes of it are still
/// on their way: the refusal reaches the client (not a dropped or
/// replaced answer), nothing changes, and the agent's next write succeeds.
#[test]
#[ignore = "sends megabytes: scripts/test runs it with the 100 MB snapshots"]
fn a_large_manifest_refused_at_its_start_is_answered_while_its_body_arrives() {
    let target = Agent::fresh("large-refused-early");
    target.register("refinery");
    target.put_memory("kept", &json!("from before"));
    let before = target.state();
    let events: Vec<String> = (0..6)
        .map(|i| {
            format!(
                r#"{{"seq":{},"type":"chunk","data":{}}}"#,
                i + 1,
                event_data(i)
            )
        })
        .collect();
    let body = format!(
        r#"{{"agent":{{"role":"polecat"}},"checkpoint":1e999,"events":[{}]}}"#,
        events.join(",")
    );
    let reply = import(&target, "", body.into_bytes());
    assert_error(&reply, 400, "invalid_manifest");
    target.assert_unchanged(&before);
    target
        .log
        .append(json!([{"type": "after", "data": {"n": 2}}]));
}
