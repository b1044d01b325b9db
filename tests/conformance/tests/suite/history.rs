//! History (`/history`, `?version=N`): 50 versions of kilo.db, the
//! workspace, the checkpoint and a memory key are each listed (in pages)
//! and read back byte for byte; with the suite's short retention policy
//! (`STASIS_HISTORY_RETENTION`, which `scripts/test` gives the servers and
//! the suite), a write drops exactly the versions the policy lets go, a pin
//! holds the versions its point resolves to, and collection removes the
//! chunks only dropped versions named while every kept version stays whole.
#![allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a conformance case fails loudly, naming what broke"
)]

use stasis_conformance::snapshot::{SnapshotAgent, sha256_hex};
use stasis_conformance::workspace::{Tree, WorkspaceAgent, noise};
use stasis_conformance::{AgentLog, Value, assert_error, call, eventually, json, num};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const KINDS: [&str; 4] = ["db_snapshot", "workspace", "checkpoint", "memory"];

/// Every version of `kind` (of memory key `k`), page by page of `limit`.
fn versions(log: &AgentLog, kind: &str, limit: u32) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after = 0;
    for _ in 0..1_000 {
        let key = if kind == "memory" { "&key=k" } else { "" };
        let query = format!("/history?kind={kind}{key}&after={after}&limit={limit}");
        let page = call("GET", &log.path(&query)).send().expect_json(200);
        all.extend(page["versions"].as_array().cloned().unwrap_or_default());
        match page.get("next_after").and_then(Value::as_u64) {
            Some(next) => after = next,
            None => return all,
        }
    }
    panic!("the listing of {kind} never ended");
}

fn numbers(listed: &[Value]) -> Vec<u64> {
    listed.iter().map(|v| num(v, "version")).collect()
}

/// One version of each kind, the n-th: kilo.db bytes (every tenth past
/// the inline limit, so chunked), a one-file tree, a checkpoint and a
/// memory value (the 25th a deletion). Answers the kilo.db bytes and the
/// tree.
fn write_version(log: &AgentLog, n: usize, big_every: usize) -> (Vec<u8>, Tree) {
    let size = if n.is_multiple_of(big_every) {
        1_200_000
    } else {
        2_000
    };
    let db = noise(size, n as u64);
    let reply = SnapshotAgent { log: log.clone() }.put(&db, &[]);
    assert!(
        reply.status == 201 || reply.status == 200,
        "{}",
        reply.text()
    );
    let mut tree = Tree::default();
    tree.file("notes.txt", false, format!("version {n}\n").as_bytes());
    let workspace = WorkspaceAgent { log: log.clone() };
    let paged = tree.paged();
    let reply = workspace.push(&tree, &paged, &[]);
    assert!(
        reply.status == 201 || reply.status == 200,
        "{}",
        reply.text()
    );
    call("PUT", &log.path("/checkpoint"))
        .json(&json!({ "step": n }))
        .send()
        .expect_json(200);
    let memory = log.path("/memory/k");
    if n == 25 {
        assert_eq!(call("DELETE", &memory).send().status, 204);
    } else {
        call("PUT", &memory)
            .json(&json!({ "n": n }))
            .send()
            .expect_json(200);
    }
    (db, tree)
}

/// Asserts version `version` of `kind` reads as written in step `n`.
fn assert_reads(log: &AgentLog, kind: &str, version: u64, n: usize, written: &(Vec<u8>, Tree)) {
    match kind {
        "db_snapshot" => {
            let reply = call("GET", &log.path(&format!("/db-snapshot?version={version}"))).send();
            assert_eq!(
                reply.status,
                200,
                "kilo.db version {version}: {}",
                reply.text()
            );
            assert!(
                reply.body == written.0,
                "kilo.db version {version} reads back whole"
            );
            let manifest = call(
                "GET",
                &log.path(&format!("/db-snapshot/manifest?version={version}")),
            )
            .send()
            .expect_json(200);
            assert_eq!(manifest["sha256"], sha256_hex(&written.0));
        }
        "workspace" => {
            let query = format!("/workspace/manifest?version={version}");
            let head = call("GET", &log.path(&query)).send().expect_json(200);
            let paged = written.1.paged();
            assert_eq!(head["root_hash"], paged.head.root_hash.to_hex());
            let workspace = WorkspaceAgent { log: log.clone() };
            for page in paged.page_names() {
                assert_eq!(workspace.get_chunk(&page).status, 200, "page {page}");
            }
        }
        "checkpoint" => {
            let reply = call("GET", &log.path(&format!("/checkpoint?version={version}"))).send();
            assert_eq!(reply.expect_json(200), json!({ "step": n }));
        }
        _ => {
            let reply = call("GET", &log.path(&format!("/memory/k?version={version}"))).send();
            if n == 25 {
                assert_error(&reply, 404, "memory_not_found");
            } else {
                assert_eq!(reply.expect_json(200)["value"], json!({ "n": n }));
            }
        }
    }
}

#[test]
fn fifty_versions_of_each_kind_are_listed_and_read_back() {
    let log = AgentLog::fresh("history-fifty");
    let mut written = Vec::new();
    for n in 1..=50 {
        log.append(json!([{"type": "message.created", "data": {"n": n}}]));
        written.push(write_version(&log, n, 10));
        // Each turn pinned as soon as it is written: the suite runs its
        // cases at once, and on a loaded server fifty turns outlast the
        // short keep-all window `scripts/test` sets. What retention alone
        // keeps is the next case's.
        let pin = call("PUT", &log.path(&format!("/history/pins/turn-{n}"))).send();
        assert_eq!(num(&pin.expect_json(201), "seq"), n as u64, "pin {n}");
    }
    for kind in KINDS {
        let listed = versions(&log, kind, 20);
        assert_eq!(listed.len(), 50, "{kind}: {listed:?}");
        let current: Vec<bool> = listed.iter().map(|v| v["current"] == true).collect();
        assert_eq!(current.iter().filter(|c| **c).count(), 1, "{kind}");
        assert!(current[49], "{kind}: the newest is current");
        let mut seen = BTreeSet::new();
        for (index, version) in listed.iter().enumerate() {
            assert!(
                seen.insert(num(version, "version")),
                "{kind}: numbers repeat"
            );
            assert_eq!(
                num(version, "seq"),
                index as u64 + 1,
                "{kind}: the seq of each"
            );
            assert_reads(
                &log,
                kind,
                num(version, "version"),
                index + 1,
                &written[index],
            );
        }
        let deleted: Vec<bool> = listed.iter().map(|v| v["deleted"] == true).collect();
        assert_eq!(
            deleted[24],
            kind == "memory",
            "{kind}: only memory's 25th is a deletion"
        );
    }
    // Bad input is refused in the contract's format and changes nothing.
    assert_error(
        &call("GET", &log.path("/history")).send(),
        400,
        "invalid_request",
    );
    let unknown = call("GET", &log.path("/history?kind=kilo")).send();
    assert_error(&unknown, 400, "invalid_request");
    let absent = call("GET", &log.path("/checkpoint?version=999999")).send();
    assert_error(&absent, 404, "version_not_found");
    let absent = call("GET", &log.path("/db-snapshot?version=999999")).send();
    assert_error(&absent, 404, "version_not_found");
    assert_eq!(numbers(&versions(&log, "checkpoint", 100)).len(), 50);
}

/// The suite's retention policy: keep-all and the tiers, in ms.
fn policy() -> Option<(u64, Vec<(u64, u64)>)> {
    let text = std::env::var("STASIS_HISTORY_RETENTION").ok()?;
    let mut parts = text.split(',');
    let keep_all = parts.next()?.trim().parse().ok()?;
    let tiers = parts
        .filter_map(|tier| {
            let (bucket, until) = tier.split_once(':')?;
            Some((bucket.trim().parse().ok()?, until.trim().parse().ok()?))
        })
        .collect();
    Some((keep_all, tiers))
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// Which of `before` (the listing before a write at `at`, which added
/// `new`) the policy and the pin at `pin_seq` keep: the module doc of
/// `stasis_domain::history::retention`, restated.
fn expected_kept(
    before: &[Value],
    new: &Value,
    (keep_all, tiers): &(u64, Vec<(u64, u64)>),
    pin_seq: Option<u64>,
    at: i64,
) -> Vec<u64> {
    let mut all: Vec<&Value> = before.iter().collect();
    all.push(new);
    let newer = |v: &Value, same: &dyn Fn(&Value) -> bool| {
        all.iter()
            .any(|o| num(o, "version") > num(v, "version") && same(o))
    };
    let mut kept = Vec::new();
    for v in &all {
        let created = v["created_at"].as_i64().unwrap_or_default();
        let age = u64::try_from(at - created).unwrap_or(0);
        let young = age < *keep_all || num(v, "version") == num(new, "version");
        let mut lower = *keep_all;
        let mut by_tier = false;
        for (bucket, until) in tiers {
            let bucket = i64::try_from(*bucket).unwrap_or(i64::MAX);
            if age >= lower && age < *until {
                by_tier = !newer(v, &|o| {
                    o["created_at"].as_i64().unwrap_or_default() / bucket == created / bucket
                });
            }
            lower = *until;
        }
        let pinned =
            pin_seq.is_some_and(|pin| num(v, "seq") <= pin && !newer(v, &|o| num(o, "seq") <= pin));
        if young || by_tier || pinned {
            kept.push(num(v, "version"));
        }
    }
    kept
}

#[test]
fn retention_drops_exactly_the_expired_versions_and_pins_hold() {
    let Some(policy) = policy() else {
        eprintln!("STASIS_HISTORY_RETENTION is not set: the retention case needs the short policy");
        return;
    };
    assert!(
        policy.0 <= 60_000,
        "the suite's keep-all must be short: {policy:?}"
    );
    let log = AgentLog::fresh("history-retention");
    let chunks_of = |version: u64| -> Vec<String> {
        let query = format!("/db-snapshot/manifest?version={version}");
        let manifest = call("GET", &log.path(&query)).send().expect_json(200);
        let chunks = manifest["chunks"].as_array().cloned().unwrap_or_default();
        chunks
            .iter()
            .filter_map(|c| c.as_str().map(str::to_owned))
            .collect()
    };
    let mut written = Vec::new();
    let (mut first, mut pinned) = (None, None);
    for n in 1..=6 {
        log.append(json!([{"type": "message.created", "data": {"n": n}}]));
        // Versions 1 and 2 of kilo.db are chunked: the pin holds 2, and
        // 1's chunks are collected.
        written.push(write_version(&log, n, if n <= 2 { 1 } else { 1_000 }));
        if n == 2 {
            let pin = call("PUT", &log.path("/history/pins/before-three")).send();
            assert_eq!(num(&pin.expect_json(201), "seq"), 2);
            // Taken now, while keep-all still holds both: a loaded server
            // may take longer than the window over the six writes.
            let listed = versions(&log, "db_snapshot", 100);
            let version_at = |seq: u64| listed.iter().find(|v| num(v, "seq") == seq).cloned();
            first = version_at(1);
            pinned = version_at(2);
        }
    }
    let (Some(first), Some(pinned)) = (first, pinned) else {
        panic!("kilo.db versions 1 and 2 are listed right after they are written");
    };
    let bad = call("PUT", &log.path("/history/pins/later"))
        .json(&json!({ "seq": 10_000 }))
        .send();
    assert_error(&bad, 400, "invalid_request");
    assert_error(
        &call("GET", &log.path("/history/pins/later")).send(),
        404,
        "pin_not_found",
    );
    let pins = call("GET", &log.path("/history/pins"))
        .send()
        .expect_json(200);
    assert_eq!(pins["pins"].as_array().map(Vec::len), Some(1));
    let first_chunks = chunks_of(num(&first, "version"));
    let pinned_chunks = chunks_of(num(&pinned, "version"));
    // Past keep-all for every version written, a seventh write of each kind
    // lets retention go.
    let newest = KINDS
        .iter()
        .flat_map(|kind| versions(&log, kind, 100))
        .filter_map(|v| v["created_at"].as_i64())
        .max()
        .unwrap_or_default();
    let wait = newest + i64::try_from(policy.0).unwrap_or(0) + 1_000 - now_ms();
    std::thread::sleep(Duration::from_millis(u64::try_from(wait).unwrap_or(0)));
    let before: Vec<Vec<Value>> = KINDS.iter().map(|kind| versions(&log, kind, 100)).collect();
    let at = now_ms();
    let seventh = write_version(&log, 7, 1_000);
    let after_write = now_ms();
    for (kind, before) in KINDS.iter().zip(&before) {
        let after = versions(&log, kind, 100);
        let new = after.last().expect("the new version");
        // Every version was past keep-all at `at` and still is at
        // `after_write`; a tier's bucket does not depend on the instant.
        let want = expected_kept(before, new, &policy, Some(2), at);
        let again = expected_kept(before, new, &policy, Some(2), after_write);
        assert_eq!(want, again, "{kind}: the expected set is not ambiguous");
        assert_eq!(
            numbers(&after),
            want,
            "{kind}: exactly the expired versions went"
        );
        for version in &after {
            // Step n wrote at seq n, after its event; the seventh is the
            // newest (no event before it: it shares seq 6).
            let n = if num(version, "version") == num(new, "version") {
                7
            } else {
                usize::try_from(num(version, "seq"))
                    .unwrap_or(1)
                    .clamp(1, 6)
            };
            let written = if n == 7 { &seventh } else { &written[n - 1] };
            assert_reads(&log, kind, num(version, "version"), n, written);
        }
        for gone in before.iter().filter(|b| !want.contains(&num(b, "version"))) {
            let version = num(gone, "version");
            let path = match *kind {
                "db_snapshot" => format!("/db-snapshot/manifest?version={version}"),
                "workspace" => format!("/workspace/manifest?version={version}"),
                "checkpoint" => format!("/checkpoint?version={version}"),
                _ => format!("/memory/k?version={version}"),
            };
            assert_error(
                &call("GET", &log.path(&path)).send(),
                404,
                "version_not_found",
            );
        }
    }
    // The dropped kilo.db version's chunks go (no kept version names them);
    // the pinned one's stay.
    let db_after = numbers(&versions(&log, "db_snapshot", 100));
    assert!(
        db_after.contains(&num(&pinned, "version")),
        "the pin holds kilo.db v2"
    );
    assert!(
        !db_after.contains(&num(&first, "version")),
        "kilo.db v1 went"
    );
    let chunk = |name: &str| call("GET", &log.path(&format!("/db-snapshot/chunks/{name}"))).send();
    eventually(
        "the dropped version's chunks are collected",
        || match first_chunks.iter().find(|name| chunk(name).status != 404) {
            Some(name) => Err(format!("chunk {name} is still served")),
            None => Ok(()),
        },
    );
    for name in &pinned_chunks {
        assert_eq!(
            chunk(name).status,
            200,
            "the pinned version's chunk {name} stays"
        );
    }
    // Unpinned, the next write lets the pinned versions go too.
    assert_eq!(
        call("DELETE", &log.path("/history/pins/before-three"))
            .send()
            .status,
        204
    );
    let before = versions(&log, "checkpoint", 100);
    let at = now_ms();
    call("PUT", &log.path("/checkpoint"))
        .json(&json!({"step": 8}))
        .send()
        .expect_json(200);
    let after = versions(&log, "checkpoint", 100);
    let new = after.last().expect("the new version");
    let want = expected_kept(&before, new, &policy, None, at);
    assert_eq!(numbers(&after), want, "unpinned, the expired go");
    assert!(want.len() < before.len() + 1, "the write let something go");
}
