//! The operator page at `/ui` in a real headless Chromium against a real
//! `stasis serve`: signing in (a malformed and an expired token refused,
//! then a read-only token minted by `stasis token`), a town's state,
//! containers, registry, pending dispatches, agents and log, one agent's
//! conversation, and its live tail, which shows an appended event and
//! resumes without loss or duplicates after the host is killed and
//! restarted; then an agent's history and lineage, read-only, and its
//! restore, undo and fork with a token that may write (`history.rs`).
//! Saves screenshots to `target/ui-artifacts/` (`town.png`, `operator.png`,
//! `history.png`, `restored.png`, `fork.png`).
//!
//! With `STASIS_URL` and `STASIS_SECRET` it runs against that server
//! instead (`wrangler dev --local`), in a town of its own, and checks the
//! live tail without the restart (it cannot restart a server it did not
//! start).
//!
//! Needs `chromium` and `chromedriver` (scripts/setup.sh installs them;
//! scripts/test runs this with `--ignored`, against the host and the edge).

#![allow(clippy::expect_used, clippy::panic, reason = "tests fail loudly")]

mod browser;
mod history;
#[path = "../support/mod.rs"]
mod support;
mod tokens;
mod town;

use browser::{Driver, eval, sign_in, text, until};
use fantoccini::{Client, Locator};
use std::{net::TcpListener, path::PathBuf};
use support::{Options, Server};

/// The host keeps every version for a day (the tests' default keeps none).
const KEEP_HISTORY: &[&str] = &["--history-retention", "86400000"];

/// The server the page is tried on, and the town it looks at.
pub struct Target {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The server's token key.
    pub secret: String,
    /// A town of this run's own.
    pub town: String,
}

impl Target {
    /// An admin bearer header value, for seeding through the API.
    pub fn admin(&self) -> String {
        format!("Bearer {}", tokens::admin(&self.secret))
    }
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs chromium and chromedriver: scripts/test installs and runs it"]
async fn the_operator_page_shows_a_town_and_a_live_tail_that_resumes_after_a_restart() {
    let data = tempfile::tempdir().expect("temp dir");
    let external = std::env::var("STASIS_URL").ok();
    let host = external.is_none().then(|| {
        support::with_compiled_components(data.path());
        Server::start(data.path(), KEEP_HISTORY)
    });
    let target = Target {
        base: external.unwrap_or_else(|| host.as_ref().map(|h| h.base.clone()).unwrap_or_default()),
        secret: std::env::var("STASIS_SECRET").unwrap_or_else(|_| support::SECRET.to_owned()),
        town: format!("ui-town-{:08x}", fastrand::u32(..)),
    };
    town::seed(&target);
    let driver = Driver::start();
    let browser = driver.browser().await;
    browser
        .goto(&format!("{}/ui", target.base))
        .await
        .expect("load /ui");

    refuses_bad_tokens(&browser, &target).await;
    let read_only = tokens::read_only_by_cli(&target.secret, &target.town);
    sign_in(&browser, &read_only, &target.town).await;
    shows_the_town(&browser).await;
    opens_the_worker(&browser).await;
    let live = town::append(&target, "live");
    until(&browser, "the appended event", &row_shown(live)).await;
    let host = match host {
        Some(host) => {
            Some(tail_resumes_after_a_restart(&browser, &target, host, data.path()).await)
        }
        None => None,
    };

    let shot = screenshot(&browser, "operator.png").await;
    println!("operator page screenshot: {}", shot.display());

    history::seed(&target);
    history::read_only(&browser, &target).await;
    history::restores_undoes_and_forks(&browser, &target).await;
    browser.close().await.expect("close the browser");
    drop(host);
}

async fn refuses_bad_tokens(browser: &Client, target: &Target) {
    sign_in(browser, "not-a-token", &target.town).await;
    let shown = until(
        browser,
        "the refusal of a malformed token",
        &error_containing(""),
    )
    .await;
    assert!(
        shown
            .as_str()
            .is_some_and(|s| s.contains("not a stasis token")),
        "{shown}"
    );
    let expired = tokens::expired_read_only(&target.secret, &target.town);
    sign_in(browser, &expired, &target.town).await;
    let shown = until(
        browser,
        "the refusal of an expired token",
        &error_containing("expired"),
    )
    .await;
    assert!(
        shown.as_str().is_some_and(|s| s.contains("has expired")),
        "{shown}"
    );
}

/// A script returning the sign-in error's text once it is shown and holds `word`.
fn error_containing(word: &str) -> String {
    format!(
        "const e = document.getElementById('sign-in-error'); \
         return e && !e.hidden && e.textContent.includes('{word}') && e.textContent"
    )
}

async fn shows_the_town(browser: &Client) {
    until(
        browser,
        "the town view",
        "return document.getElementById('town-view')",
    )
    .await;
    assert_eq!(text(browser, "#draining").await, "draining");
    assert_eq!(text(browser, "#current-container").await, "container-1");
    let evicted = text(browser, "#evicted").await;
    assert!(
        evicted.contains("container-0") && evicted.contains("node drained"),
        "{evicted}"
    );
    assert!(
        evicted.contains("container-1") && evicted.contains("SIGTERM"),
        "{evicted}"
    );
    let registry = text(browser, "#registry-agents").await;
    assert!(
        registry.contains("ses-1") && registry.contains("4096"),
        "{registry}"
    );
    let pending = text(browser, "#pending-dispatches").await;
    assert!(
        pending.contains("hq") && pending.contains("mayor"),
        "{pending}"
    );
    let worker = text(browser, "tr[data-agent='rig-a/polecat-1']").await;
    for shown in ["polecat", "v1, 48.0 KiB", "yes"] {
        assert!(
            worker.contains(shown),
            "the worker's row lacks {shown:?}: {worker}"
        );
    }
    let log = text(browser, "#town-log-table").await;
    for kind in [
        "container_eviction",
        "container_ready",
        "registry_updated",
        "dispatch_deferred",
    ] {
        assert!(log.contains(kind), "the town log lacks {kind}: {log}");
    }
    let who = text(browser, "#who").await;
    assert!(who.contains("read-only"), "{who}");
    let shot = screenshot(browser, "town.png").await;
    println!("town view screenshot: {}", shot.display());
}

/// Opens the worker from the town's agents: its record, conversation and
/// the live tail's backlog.
async fn opens_the_worker(browser: &Client) {
    let link = browser
        .find(Locator::Css("tr[data-agent='rig-a/polecat-1'] a"))
        .await
        .expect("the worker's link");
    link.click().await.expect("open the worker");
    let conversation = text(browser, "#conversation").await;
    assert!(
        conversation.contains("A missing lockfile entry"),
        "{conversation}"
    );
    assert_eq!(text(browser, "#role").await, "polecat");
    until(browser, "a live tail", &phase_is("live")).await;
    assert_eq!(
        tail_seqs(browser).await,
        (1..=5).collect::<Vec<_>>(),
        "the backlog"
    );
}

/// Kills and restarts the host under the live tail, appends while the page
/// is disconnected and once it is back, and checks the tail shows every seq
/// once, in order.
async fn tail_resumes_after_a_restart(
    browser: &Client,
    target: &Target,
    host: Server,
    data: &std::path::Path,
) -> Server {
    let port = host
        .address()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok());
    let port: u16 = port.expect("the host's port");
    host.kill_hard();
    until(browser, "the tail reconnecting", &phase_is("reconnecting")).await;
    let host = Server::start_on(port, data, KEEP_HISTORY, &Options::default());
    let missed = town::append(target, "while disconnected");
    until(
        browser,
        "the event appended while disconnected",
        &row_shown(missed),
    )
    .await;
    let after = town::append(target, "after the restart");
    until(
        browser,
        "the event appended after the restart",
        &row_shown(after),
    )
    .await;

    assert_eq!(
        tail_seqs(browser).await,
        (1..=after).collect::<Vec<_>>(),
        "every seq once"
    );
    let status = eval(
        browser,
        "return document.getElementById('tail-status').dataset",
    )
    .await;
    assert_eq!(status["duplicates"], "0", "{status}");
    assert!(
        status["reconnects"].as_str().is_some_and(|n| n != "0"),
        "{status}"
    );
    host
}

fn phase_is(phase: &str) -> String {
    format!("return document.getElementById('tail-status')?.dataset.phase === '{phase}'")
}

fn row_shown(seq: u64) -> String {
    format!("return document.querySelector(\"#tail-table tr[data-seq='{seq}']\") !== null")
}

/// The seqs the live tail shows, oldest first.
async fn tail_seqs(browser: &Client) -> Vec<u64> {
    let seqs = eval(
        browser,
        "return [...document.querySelectorAll('#tail-table tbody tr')].map(r => Number(r.dataset.seq))",
    )
    .await;
    let mut seqs: Vec<u64> = serde_json::from_value(seqs).expect("seqs");
    seqs.reverse();
    seqs
}

/// Saves what the browser shows as `<target>/ui-artifacts/<name>`.
async fn screenshot(browser: &Client, name: &str) -> PathBuf {
    let png = browser.screenshot().await.expect("a screenshot");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("ui-artifacts");
    std::fs::create_dir_all(&dir).expect("the artifacts folder");
    let path = dir.join(name);
    std::fs::write(&path, png).expect("write the screenshot");
    path.canonicalize().unwrap_or(path)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}
