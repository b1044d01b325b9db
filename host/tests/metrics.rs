//! `GET /metrics` on a real host: traffic of every kind the metrics count
//! (appends, a read, a live tail, a chunked and a whole-file snapshot push,
//! a fenced write, an eviction), then a scrape parsed with an OpenMetrics
//! parser, whose counters and gauges must have moved by exactly that
//! traffic; and the JSON request log lines of that traffic.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod support;

use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use stasis_api::auth::Scope;
use std::{
    io::{Read, Write},
    net::TcpStream,
    time::{Duration, Instant},
};
use support::{Options, Server, admin, agent, mint};

type Scrape = MetricsExposition<OpenMetricsType, OpenMetricsValue>;

const TOWN: &str = "metrics-town";
const EVENTS: &str = "/api/towns/{town}/rigs/{rig}/agents/{agent}/events";

fn agent_path(rest: &str) -> String {
    format!("/api/towns/{TOWN}/rigs/r1/agents/a1{rest}")
}

/// A request with a bearer token and a request id of its own; answers its
/// status, the request id echoed (which must be the one sent) and its body.
fn send(
    server: &Server,
    method: &str,
    path: &str,
    token: &str,
    body: Option<(&str, Vec<u8>)>,
) -> (u16, String, Vec<u8>) {
    let request = http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", server.base))
        .header("Authorization", token)
        .header("X-Request-Id", next_id());
    let request = match body {
        Some((content_type, bytes)) => request.header("Content-Type", content_type).body(bytes),
        None => request.body(Vec::new()),
    }
    .expect("a request");
    let mut response = agent().run(request).expect("the server answers");
    let id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(id.starts_with("req-"), "the request id is echoed: {id:?}");
    let status = response.status().as_u16();
    let bytes = response.body_mut().read_to_vec().expect("a body");
    (status, id, bytes)
}

fn next_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    format!(
        "req-{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

fn json_body(value: &Value) -> Option<(&'static str, Vec<u8>)> {
    Some(("application/json", value.to_string().into_bytes()))
}

fn scrape(server: &Server) -> Scrape {
    let (status, _, body) = send(server, "GET", "/metrics", &admin(), None);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let text = String::from_utf8(body).expect("UTF-8 metrics");
    openmetrics_parser::openmetrics::parse_openmetrics(&text)
        .unwrap_or_else(|err| panic!("unparseable metrics ({err:?}):\n{text}"))
}

/// The sum over `family`'s samples whose labels include `labels`: a
/// counter's or gauge's value, a histogram's count.
fn value(scrape: &Scrape, family: &str, labels: &[(&str, &str)]) -> f64 {
    let Some(family) = scrape.families.get(family) else {
        return 0.0;
    };
    family
        .iter_samples()
        .filter(|sample| {
            let set = sample.get_labelset().expect("a label set");
            labels
                .iter()
                .all(|(name, want)| set.get_label_value(name) == Some(*want))
        })
        .map(|sample| match &sample.value {
            OpenMetricsValue::Counter(counter) => counter.value.as_f64(),
            OpenMetricsValue::Gauge(gauge) => gauge.as_f64(),
            OpenMetricsValue::Histogram(histogram) => histogram.count.unwrap_or(0) as f64,
            other => panic!("unexpected sample {other:?}"),
        })
        .sum()
}

/// What moved between two scrapes.
fn moved(before: &Scrape, after: &Scrape, family: &str, labels: &[(&str, &str)]) -> f64 {
    value(after, family, labels) - value(before, family, labels)
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Opens a live tail and reads its head; the tail stays open while the
/// stream lives.
fn open_tail(server: &Server) -> TcpStream {
    let mut stream = TcpStream::connect(server.address()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\r\n",
        agent_path("/events"),
        admin()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut head = [0u8; 512];
    let read = stream.read(&mut head).expect("the tail's head");
    let head = String::from_utf8_lossy(&head[..read]).into_owned();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stream
}

/// Scrapes until `check` holds (a tail's end is seen by the server a moment
/// after the client closes), at most 10 s.
fn scrape_until(server: &Server, check: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let scrape = scrape(server);
        if check(&scrape) || Instant::now() > deadline {
            return scrape;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn container_token(container: &str) -> String {
    let scope = Scope::Container {
        town: TOWN.into(),
        container_id: container.into(),
    };
    format!("Bearer {}", mint(scope, support::DAY))
}

#[test]
fn the_counters_move_with_the_traffic_and_each_request_is_logged() {
    let data = tempfile::tempdir().expect("temp dir");
    support::with_compiled_components(data.path());
    let log = data.path().join("host.log");
    let options = Options {
        log_file: Some(log.clone()),
        log_filter: Some("info".into()),
        ..Options::default()
    };
    let server = Server::start_with(data.path(), &["--log-format", "json"], &options);
    let admin = admin();
    let before = scrape(&server);

    // Appends (3 events, then 2) and a read.
    for count in [3, 2] {
        let events: Vec<Value> = (0..count)
            .map(|n| json!({"type": "t", "data": {"n": n}}))
            .collect();
        let body = json_body(&json!({"events": events}));
        let (status, _, _) = send(&server, "POST", &agent_path("/events"), &admin, body);
        assert_eq!(status, 200);
    }
    let (status, read_id, _) = send(&server, "GET", &agent_path("/events"), &admin, None);
    assert_eq!(status, 200);

    // A live tail, open during one scrape.
    let tail = open_tail(&server);
    let during = scrape_until(&server, |s| value(s, "stasis_sse_tails_open", &[]) == 1.0);
    assert_eq!(value(&during, "stasis_sse_tails_open", &[]), 1.0);
    drop(tail);

    // A chunked push: a chunk stored, the same again (already present), a
    // `missing` check of it and of another, the manifest; then a whole file.
    let chunk = vec![7u8; 4096];
    let sha = sha256_hex(&chunk);
    let chunk_path = agent_path(&format!("/db-snapshot/chunks/{sha}"));
    for expected in [201, 200] {
        let body = Some(("application/octet-stream", chunk.clone()));
        assert_eq!(send(&server, "PUT", &chunk_path, &admin, body).0, expected);
    }
    let other = sha256_hex(b"never uploaded");
    let body = json_body(&json!({"chunks": [sha, other]}));
    let (status, _, missing) = send(
        &server,
        "POST",
        &agent_path("/db-snapshot/missing"),
        &admin,
        body,
    );
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_slice::<Value>(&missing).expect("json")["missing"],
        json!([other])
    );
    let manifest = json!({"size": 4096, "sha256": sha, "chunk_size": 4096, "chunks": [sha]});
    let (status, _, body) = send(
        &server,
        "PUT",
        &agent_path("/db-snapshot/manifest"),
        &admin,
        json_body(&manifest),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let whole = Some(("application/octet-stream", vec![9u8; 2048]));
    assert_eq!(
        send(&server, "PUT", &agent_path("/db-snapshot"), &admin, whole).0,
        201
    );

    // Two containers heartbeat; the first one's write is fenced.
    for container in ["c1", "c2"] {
        let body = json_body(&json!({"container_id": container}));
        let path = format!("/api/towns/{TOWN}/heartbeat");
        assert_eq!(send(&server, "POST", &path, &admin, body).0, 200);
    }
    let body = json_body(&json!({"events": [{"type": "late"}]}));
    let (status, _, _) = send(
        &server,
        "POST",
        &agent_path("/events"),
        &container_token("c1"),
        body,
    );
    assert_eq!(status, 409);

    // An eviction: the town drains.
    let eviction = format!("/api/towns/{TOWN}/container-eviction");
    let body = json_body(&json!({"container_id": "c2"}));
    assert_eq!(send(&server, "POST", &eviction, &admin, body).0, 202);
    // A path no route matches.
    assert_eq!(send(&server, "GET", "/no/such/route", &admin, None).0, 404);

    let after = scrape_until(&server, |s| value(s, "stasis_sse_tails_open", &[]) == 0.0);
    let moved = |family: &str, labels: &[(&str, &str)]| moved(&before, &after, family, labels);
    let events = [("route", EVENTS)];
    assert_eq!(
        moved(
            "stasis_http_requests",
            &[("route", EVENTS), ("method", "POST"), ("status", "200")]
        ),
        2.0
    );
    assert_eq!(
        moved(
            "stasis_http_requests",
            &[("route", EVENTS), ("method", "GET"), ("status", "200")]
        ),
        2.0,
        "a read and a tail"
    );
    assert_eq!(
        moved(
            "stasis_http_requests",
            &[("route", EVENTS), ("status", "409")]
        ),
        1.0
    );
    assert_eq!(
        moved(
            "stasis_http_requests",
            &[("route", "unmatched"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(moved("stasis_http_request_duration_seconds", &events), 5.0);
    assert!(moved("stasis_http_request_body_bytes", &events) > 100.0);
    assert!(moved("stasis_http_response_body_bytes", &events) > 100.0);
    assert_eq!(moved("stasis_appends", &[]), 2.0);
    assert_eq!(moved("stasis_events_appended", &[]), 5.0);
    assert_eq!(value(&after, "stasis_sse_tails_open", &[]), 0.0);
    assert_eq!(
        moved("stasis_snapshot_pushes", &[("kind", "manifest")]),
        1.0
    );
    assert_eq!(moved("stasis_snapshot_pushes", &[("kind", "whole")]), 1.0);
    assert_eq!(
        moved("stasis_snapshot_chunk_uploads", &[("kind", "stored")]),
        1.0
    );
    assert_eq!(
        moved(
            "stasis_snapshot_chunk_uploads",
            &[("kind", "already_present")]
        ),
        1.0
    );
    assert_eq!(
        moved("stasis_snapshot_chunks_checked", &[("kind", "present")]),
        1.0
    );
    assert_eq!(
        moved("stasis_snapshot_chunks_checked", &[("kind", "missing")]),
        1.0
    );
    assert_eq!(
        moved(
            "stasis_fenced_writes_refused",
            &[("kind", "container_fenced")]
        ),
        1.0
    );
    assert_eq!(value(&after, "stasis_towns_draining", &[]), 1.0);
    let agent_groups = moved("stasis_group_commit_calls", &[("kind", "agent")]);
    assert!(agent_groups >= 2.0, "{agent_groups} agent group commits");
    assert_eq!(
        agent_groups,
        moved("stasis_group_commit_duration_seconds", &[("kind", "agent")])
    );
    assert!(moved("stasis_object_queue_depth", &[("kind", "town")]) >= 3.0);

    // A heartbeat from a new container ends the drain.
    let body = json_body(&json!({"container_id": "c3"}));
    assert_eq!(
        send(
            &server,
            "POST",
            &format!("/api/towns/{TOWN}/heartbeat"),
            &admin,
            body
        )
        .0,
        200
    );
    assert_eq!(value(&scrape(&server), "stasis_towns_draining", &[]), 0.0);

    check_metrics_auth(&server);
    drop(server);
    check_log_lines(&std::fs::read_to_string(&log).expect("the log"), &read_id);
}

/// Only admin tokens read the metrics; a read-only one will do.
fn check_metrics_auth(server: &Server) {
    let town = format!("Bearer {}", mint(Scope::Town(TOWN.into()), support::DAY));
    let (status, _, body) = send(server, "GET", "/metrics", &town, None);
    let error: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        (status, &error["error"]["reason"]),
        (403, &json!("admin_only"))
    );
    let keys = stasis_api::auth::KeyRing::single(support::SECRET).expect("keys");
    let grant = stasis_api::auth::Grant {
        scope: Scope::Admin,
        read_only: true,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_secs();
    let read_only = format!(
        "Bearer {}",
        keys.mint(&grant, now, support::DAY).expect("mint")
    );
    assert_eq!(send(server, "GET", "/metrics", &read_only, None).0, 200);
}

/// One JSON line per request, with its id, route, ids, status, bytes and
/// duration; an error's line names its code.
fn check_log_lines(log: &str, read_id: &str) {
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["message"] == "request")
        .collect();
    let read = lines
        .iter()
        .find(|line| line["request_id"] == read_id)
        .unwrap_or_else(|| panic!("no line for the read in:\n{log}"));
    assert_eq!(read["method"], "GET");
    assert_eq!(read["route"], EVENTS);
    assert_eq!(
        (&read["town"], &read["rig"], &read["agent"]),
        (&json!(TOWN), &json!("r1"), &json!("a1"))
    );
    assert_eq!(read["status"], 200);
    assert!(read["bytes_out"].as_u64().unwrap_or(0) > 100, "{read}");
    assert!(read["duration_ms"].as_f64().is_some(), "{read}");
    let fenced = lines
        .iter()
        .find(|line| line["status"] == 409)
        .unwrap_or_else(|| panic!("no line for the fenced write in:\n{log}"));
    assert_eq!(fenced["error_code"], "container_fenced");
    assert!(fenced["bytes_in"].as_u64().unwrap_or(0) > 10, "{fenced}");
    let tail = lines
        .iter()
        .find(|line| {
            line["route"] == EVENTS && line["method"] == "GET" && line["request_id"] != read_id
        })
        .unwrap_or_else(|| panic!("no line for the tail in:\n{log}"));
    assert_eq!(
        tail["request_id"].as_str().map(str::len),
        Some(16),
        "a made-up id: {tail}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line["route"] == "unmatched" && line["error_code"] == "not_found")
    );
}
