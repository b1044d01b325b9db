//! With the open-object cap set low, touching many more agents than the
//! cap keeps the host's descriptors bounded, every agent's data intact, and
//! a live tail on an agent alive while others push objects out.

use crate::{
    raw::{self, connect, send},
    start,
    support::{Options, Server, admin, agent},
    timeouts::read_until,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const CAP: usize = 8;
const AGENTS: usize = 200;
/// Descriptors an open object holds: its database, `-wal` and `-shm`.
const PER_OBJECT: usize = 3;

fn events_url(server: &Server, agent_id: &str) -> String {
    format!(
        "{}/api/towns/t/rigs/r/agents/{agent_id}/events",
        server.base
    )
}

fn append(server: &Server, agent_id: &str, data: Value) -> Value {
    agent()
        .post(events_url(server, agent_id))
        .header("authorization", admin())
        .send_json(json!({"events": [{"type": "t", "data": data}]}))
        .expect("append")
        .body_mut()
        .read_json()
        .expect("append answer")
}

fn read_all(server: &Server, agent_id: &str) -> Value {
    agent()
        .get(events_url(server, agent_id))
        .header("authorization", admin())
        .call()
        .expect("read")
        .body_mut()
        .read_json()
        .expect("read answer")
}

/// Waits (closing is done off the request path) until the host holds at
/// most `bound` descriptors; returns the last count seen.
fn settle_below(server: &Server, bound: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let fds = server.open_fds();
        if fds <= bound || Instant::now() > deadline {
            return fds;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn many_more_agents_than_the_cap_keep_descriptors_bounded_and_data_intact() {
    let data = tempfile::tempdir().expect("temp dir");
    let cap = CAP.to_string();
    let server = start(
        data.path(),
        &["--max-open-objects", &cap],
        &Options::default(),
    );
    let baseline = server.open_fds();
    let bound = baseline + CAP * PER_OBJECT + 8;

    let mut peak = 0;
    for n in 0..AGENTS {
        let answer = append(&server, &format!("a{n}"), json!({"n": n}));
        assert_eq!(answer["last_seq"], 1, "{answer}");
        if n % 20 == 19 {
            peak = peak.max(settle_below(&server, bound));
        }
    }
    assert!(
        peak <= bound,
        "{peak} descriptors with {AGENTS} agents touched; at most {bound} expected \
         ({baseline} at start, {CAP} objects of {PER_OBJECT})"
    );

    for n in 0..AGENTS {
        let page = read_all(&server, &format!("a{n}"));
        assert_eq!(page["events"].as_array().map(Vec::len), Some(1), "{page}");
        assert_eq!(page["events"][0]["data"], json!({"n": n}));
    }
    let reopened = append(&server, "a0", json!({"again": true}));
    assert_eq!(
        reopened["first_seq"], 2,
        "a reopened agent goes on from its log"
    );
}

#[test]
fn unused_objects_close_after_the_idle_timeout() {
    let data = tempfile::tempdir().expect("temp dir");
    let flags = ["--object-idle-timeout", "1s"];
    let server = start(data.path(), &flags, &Options::default());
    let baseline = server.open_fds();
    for n in 0..30 {
        append(&server, &format!("a{n}"), json!({"n": n}));
    }
    let settled = settle_below(&server, baseline + 4);
    assert!(
        settled <= baseline + 4,
        "{settled} descriptors after 30 agents idled, {baseline} at start"
    );
}

#[test]
fn a_live_tail_survives_other_agents_pushing_objects_out() {
    let data = tempfile::tempdir().expect("temp dir");
    let server = start(
        data.path(),
        &["--max-open-objects", "2"],
        &Options::default(),
    );
    append(&server, "watched", json!({"first": true}));
    let mut tail = connect(&server.address(), Duration::from_secs(10));
    let headers = format!(
        "Authorization: {}\r\nAccept: text/event-stream\r\n",
        admin()
    );
    send(
        &mut tail,
        &raw::get("/api/towns/t/rigs/r/agents/watched/events", &headers),
    );
    let mut seen = String::new();
    read_until(&mut tail, &mut seen, "\"first\"");

    for n in 0..20 {
        append(&server, &format!("other{n}"), json!({"n": n}));
    }
    append(&server, "watched", json!({"second": true}));
    // Well before the 15 s keep-alive, after which a tail reads again anyway:
    // only a tail still woken by its object's appends sees it this soon.
    read_until(&mut tail, &mut seen, "\"second\"");
}
