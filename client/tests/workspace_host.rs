//! Workspaces against a real stasis server (`STASIS_URL`, `STASIS_SECRET`; ignored in a plain
//! `cargo test`, `scripts/test` runs them against the host it starts): a git worktree with an
//! uncommitted edit and an unpushed commit goes up and comes back whole (`git status` and `git
//! log` the same), a one-file edit sends only what the server lacks, two writers meet a 412
//! and win after one re-read, and the command line's refusals and exit codes.

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use stasis_api::auth::{Grant, KeyRing, KeySettings, Scope};
use stasis_client::workspace::{self, ScanOptions};
use stasis_client::workspace_sync::{self, PullOptions, PullOutcome, PushOptions, StateDir};
use stasis_client::{AgentRef, Client, Config};
use stasis_domain::workspace::ContentHash;
use stasis_domain::workspace::pages;

const HOW: &str = "these tests need a stasis server: STASIS_URL=http://127.0.0.1:8787 \
    STASIS_SECRET=<its secret> cargo test -p stasis-client --test workspace_host -- --ignored";

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn url() -> String {
    std::env::var("STASIS_URL").unwrap_or_else(|_| panic!("{HOW}"))
}

/// A token for `town`, minted from the server's secret.
fn token(town: &str) -> String {
    let secret = std::env::var("STASIS_SECRET").unwrap_or_else(|_| panic!("{HOW}"));
    let settings = KeySettings {
        secret: Some(&secret),
        keys: None,
        signing_key_id: None,
    };
    let keys = KeyRing::from_settings(&settings)
        .expect("the secret is accepted")
        .expect("a key");
    let grant = Grant::new(Scope::Town(town.to_owned()));
    keys.mint(&grant, now_ms() / 1000, Duration::from_secs(3600))
        .expect("a token")
}

/// A registered polecat in a town of its own, and a client for it.
fn polecat(case: &str) -> (AgentRef, Client) {
    let town = format!("t-ws-{case}-{}", now_ms());
    let client = Client::new(Config::new(&url(), Some(token(&town))).expect("a config"));
    let agent = AgentRef::new(&town, "hq", "polecat-1").expect("ids");
    client
        .put_json::<Value>(&agent.path(""), &json!({"role": "polecat"}), None)
        .expect("registered");
    (agent, client)
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Polecat",
            "-c",
            "user.email=polecat@example.com",
        ])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A polecat's worktree: a pushed commit, an unpushed one, an uncommitted edit, an untracked
/// file, an ignored build folder, and every kind of entry.
fn worktree(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir.join("src")).expect("dirs");
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join(".gitignore"), "target/\n").expect("file");
    std::fs::write(dir.join("src/lib.rs"), "pub fn one() -> u32 { 1 }\n").expect("file");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "first"]);
    std::fs::write(dir.join("src/two.rs"), "pub fn two() -> u32 { 2 }\n").expect("file");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "unpushed: two"]);
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn one() -> u32 { 1 } // edited\n",
    )
    .expect("edit");
    std::fs::write(dir.join("notes.txt"), "untracked\n").expect("file");
    std::fs::create_dir_all(dir.join("target/debug")).expect("dirs");
    std::fs::write(dir.join("target/debug/big"), vec![7u8; 1 << 20]).expect("ignored");
    std::fs::create_dir_all(dir.join("empty")).expect("empty dir");
    std::fs::write(dir.join("zero"), "").expect("0 bytes");
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho run\n").expect("file");
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    std::os::unix::fs::symlink("does/not/exist", dir.join("dangling")).expect("link");
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.join(odd), "latin-1 name\n").expect("non-UTF-8 name");
    // Several chunks, none alike, so that an edit inside it changes one or two of them.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let big: Vec<u8> = (0..3_000_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    std::fs::write(dir.join("data.bin"), big).expect("file");
}

fn root_hash(dir: &Path) -> ContentHash {
    workspace::scan(dir, &ScanOptions::default())
        .expect("scan")
        .summary
        .root_hash
}

fn options(dir: &Path, state: &Path) -> PushOptions {
    PushOptions {
        state: StateDir::new(state),
        ..PushOptions::beside(dir)
    }
}

#[test]
#[ignore = "needs a stasis server"]
fn a_worktree_comes_back_whole_with_its_edit_and_its_unpushed_commit() {
    let (agent, client) = polecat("roundtrip");
    let tmp = tempfile::tempdir().expect("dir");
    let a = tmp.path().join("a/work");
    worktree(&a);
    let pushed = workspace_sync::push(&client, &agent, &a, &options(&a, &tmp.path().join("sa")))
        .expect("pushed");
    let receipt = pushed.receipt.clone().expect("a version");
    assert_eq!(receipt.root_hash, root_hash(&a));
    assert_eq!(pushed.transfer.chunks_sent, pushed.transfer.chunks_total);
    assert!(
        pushed.total_size < 4 << 20,
        "target/ left out: {} bytes",
        pushed.total_size
    );

    let record: Value = client.get_json(&agent.path(""), None).expect("agent");
    assert_eq!(
        record["workspace"]["version"],
        json!(receipt.version),
        "{record}"
    );

    let b = tmp.path().join("b/work");
    let pull = PullOptions {
        state: StateDir::new(tmp.path().join("sb")),
        deadline: None,
    };
    let PullOutcome::Restored(restored) =
        workspace_sync::pull(&client, &agent, &b, &pull).expect("pulled")
    else {
        panic!("a restored workspace");
    };
    assert_eq!(restored.root_hash, receipt.root_hash);
    assert_eq!(root_hash(&b), receipt.root_hash, "the tree as written");
    // B's record names the pulled version: an unchanged tree sends nothing. (Before `git
    // status`, which refreshes the index's stat data: a change of the tree like any other.)
    let again = workspace_sync::push(&client, &agent, &b, &options(&b, &tmp.path().join("sb")))
        .expect("unchanged");
    assert!(again.skipped(), "{again:?}");
    assert_eq!(
        std::fs::read(b.join("src/lib.rs")).expect("read"),
        std::fs::read(a.join("src/lib.rs")).expect("read"),
        "the uncommitted edit"
    );
    assert!(!b.join("target").exists(), "ignored: not restored");
    assert_eq!(
        git(&b, &["status", "--porcelain"]),
        git(&a, &["status", "--porcelain"])
    );
    assert_eq!(
        git(&b, &["log", "--format=%H %s"]),
        git(&a, &["log", "--format=%H %s"])
    );
    assert!(git(&b, &["log", "--format=%s"]).contains("unpushed: two"));
}

#[test]
#[ignore = "needs a stasis server"]
fn a_one_file_edit_sends_only_the_chunks_the_server_lacks() {
    let (agent, client) = polecat("incremental");
    let tmp = tempfile::tempdir().expect("dir");
    let dir = tmp.path().join("work");
    worktree(&dir);
    let state = tmp.path().join("state");
    let first = workspace_sync::push(&client, &agent, &dir, &options(&dir, &state)).expect("first");
    let total = first.transfer.chunks_total;
    assert!(total >= 10, "several chunks: {total}");

    // One byte changed in the middle of the 3 MB file.
    let mut big = std::fs::read(dir.join("data.bin")).expect("read");
    big[1_500_000] ^= 0xff;
    std::fs::write(dir.join("data.bin"), &big).expect("edit");

    // What the server lacks, asked before the push: exactly what the push must send.
    let scan = workspace::scan(&dir, &ScanOptions::default()).expect("scan");
    let (head, _) = pages::split(
        &scan.manifest,
        &Default::default(),
        workspace_sync::page_bytes(scan.summary.total_size),
    )
    .expect("pages");
    let mut names = scan.manifest.unique_chunks();
    names.extend(head.pages.iter().map(|p| p.sha256));
    let lacked: Value = client
        .post_json(
            &agent.path("/workspace/missing"),
            &json!({ "chunks": names }),
            None,
        )
        .expect("missing");
    let lacked: HashSet<String> = lacked["missing"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect();

    let second =
        workspace_sync::push(&client, &agent, &dir, &options(&dir, &state)).expect("second");
    let sent = second.transfer;
    assert_eq!(
        second.scan.files_read, 1,
        "only the edited file is read: {second:?}"
    );
    assert!(
        (1..=2).contains(&sent.chunks_sent),
        "one or two chunks: {sent:?}"
    );
    assert_eq!(sent.pages_sent, 1);
    assert_eq!(
        (sent.chunks_sent + sent.pages_sent) as usize,
        lacked.len(),
        "sent what the server lacked, and nothing else"
    );
    assert!(
        sent.bytes_sent * 10 < first.transfer.bytes_sent,
        "{} of {} bytes",
        sent.bytes_sent,
        first.transfer.bytes_sent
    );
    assert_eq!(second.receipt.expect("stored").version, 2);
    eprintln!(
        "first push: {} of {} chunks, {} bytes; after a one-byte edit: {} chunks, {} page, {} \
         bytes ({} file read)",
        first.transfer.chunks_sent,
        total,
        first.transfer.bytes_sent,
        sent.chunks_sent,
        sent.pages_sent,
        sent.bytes_sent,
        second.scan.files_read
    );
}

#[test]
#[ignore = "needs a stasis server"]
fn two_writers_meet_a_412_and_each_wins_after_one_re_read() {
    let (agent, client) = polecat("race");
    let tmp = tempfile::tempdir().expect("dir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for dir in [&a, &b] {
        std::fs::create_dir_all(dir).expect("dir");
    }
    std::fs::write(a.join("file"), "from a\n").expect("file");
    std::fs::write(b.join("file"), "from b\n").expect("file");
    let (sa, sb) = (tmp.path().join("sa"), tmp.path().join("sb"));
    let first = workspace_sync::push(&client, &agent, &a, &options(&a, &sa)).expect("a");
    // b has never synced: its If-None-Match: * meets a's version.
    let second = workspace_sync::push(&client, &agent, &b, &options(&b, &sb)).expect("b");
    assert_eq!(
        second.receipt.expect("stored").version,
        first.receipt.expect("stored").version + 1
    );
    // a's If-Match names its own, superseded, version.
    std::fs::write(a.join("file"), "from a, again\n").expect("edit");
    let third = workspace_sync::push(&client, &agent, &a, &options(&a, &sa)).expect("a again");
    let current: Value = client
        .get_json(&agent.path("/workspace/manifest"), None)
        .expect("current");
    assert_eq!(current["root_hash"], json!(third.root_hash), "{current}");
    assert_eq!(current["root_hash"], json!(root_hash(&a)));
}

fn cli(agent: &AgentRef, args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_stasis-client"))
        .args(["--url", &url(), "--token", &token(agent.town())])
        .args(args)
        .args([
            "--town",
            agent.town(),
            "--rig",
            agent.rig(),
            "--agent",
            agent.agent(),
        ])
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs a stasis server"]
fn the_command_line_pushes_pulls_and_refuses_with_its_exit_codes() {
    let (agent, _client) = polecat("cli");
    let tmp = tempfile::tempdir().expect("dir");
    let empty = tmp.path().join("empty");
    let (code, _) = cli(
        &agent,
        &["workspace", "pull", "--dir", empty.to_str().expect("utf-8")],
    );
    assert_eq!(code, 3, "no workspace yet");
    assert!(!empty.exists(), "nothing written");

    let dir = tmp.path().join("work");
    worktree(&dir);
    let dir_arg = dir.to_str().expect("utf-8");
    let (code, err) = cli(
        &agent,
        &["workspace", "push", "--dir", dir_arg, "--exclude", "*.bin"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, err) = cli(&agent, &["workspace", "pull", "--dir", dir_arg]);
    assert_eq!(code, 1, "a folder that holds files is refused: {err}");
    assert!(err.contains("never merges"), "{err}");

    let copy = tmp.path().join("copy");
    let (code, err) = cli(
        &agent,
        &["workspace", "pull", "--dir", copy.to_str().expect("utf-8")],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        !copy.join("data.bin").exists(),
        "--exclude '*.bin' left it out"
    );
    assert_eq!(
        std::fs::read(copy.join("src/two.rs")).expect("read"),
        std::fs::read(dir.join("src/two.rs")).expect("read")
    );
}
