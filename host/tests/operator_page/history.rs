//! An agent's history, lineage, restore (and its undo) and fork through the
//! page. `rig-a/historian` gets three kilo.db pushes, three checkpoints and
//! two memory values, one event between each (seqs 1, 2, 3) and pins at 1
//! and 2 (so that the edge's short retention in CI keeps those points). A
//! read-only token sees the versions and no action, and the server refuses
//! its direct attempt; a token that may write restores to seq 1 (first
//! refused 409 `agent_live` while a container is alive, then with the
//! fence), undoes it with its pin, and forks at seq 2.

use super::{
    Target,
    browser::{eval, sign_in, text, until},
    screenshot, tokens,
    town::{self, RIG, call},
};
use fantoccini::{Client, Locator};
use serde_json::{Value, json};

pub const AGENT: &str = "historian";
const FORK: &str = "historian-fork";

fn path(agent: &str, rest: &str) -> String {
    format!("/rigs/{RIG}/agents/{agent}{rest}")
}

/// Seeds the historian; see the module docs.
pub fn seed(target: &Target) {
    call(
        target,
        "PUT",
        &path(AGENT, ""),
        Some(json!({"role": "polecat"})),
    );
    for (step, kib) in [(1_u8, 16), (2, 32), (3, 64)] {
        let event = json!({"events": [{"type": "tool.output", "data": {"step": step}}]});
        call(target, "POST", &path(AGENT, "/events"), Some(event));
        let snapshot = path(AGENT, "/db-snapshot");
        town::put_snapshot(target, &snapshot, step, kib * 1024);
        let checkpoint = json!({"step": step});
        call(target, "PUT", &path(AGENT, "/checkpoint"), Some(checkpoint));
        if step < 3 {
            let value = json!(format!("plan {step}"));
            call(target, "PUT", &path(AGENT, "/memory/plan"), Some(value));
            let pin = json!({"seq": step});
            call(
                target,
                "PUT",
                &path(AGENT, &format!("/history/pins/point-{step}")),
                Some(pin),
            );
        }
    }
}

fn checkpoint_step(target: &Target, agent: &str) -> Value {
    call(target, "GET", &path(agent, "/checkpoint"), None)["step"].clone()
}

/// The page's hash of an agent of the rig.
fn hash(target: &Target, agent: &str) -> String {
    format!(
        "{}/ui#/towns/{}/rigs/{RIG}/agents/{agent}",
        target.base, target.town
    )
}

/// Opens `agent`'s view and waits until it is shown.
async fn open(browser: &Client, target: &Target, agent: &str) {
    browser
        .goto(&hash(target, agent))
        .await
        .expect("open an agent");
    let shown = format!(
        "return document.querySelector('#agent-view h2')?.textContent === {}",
        json!(format!("Agent {RIG}/{agent}"))
    );
    until(browser, &format!("{agent}'s view"), &shown).await;
}

/// The read-only token (signed in already) on the historian: its versions
/// with their sizes and pins, no action offered, a direct attempt refused.
pub async fn read_only(browser: &Client, target: &Target) {
    open(browser, target, AGENT).await;
    let kilo = text(browser, "#history-db_snapshot").await;
    for size in ["64.0 KiB", "32.0 KiB", "16.0 KiB"] {
        assert!(
            kilo.contains(size),
            "kilo.db's versions lack {size}: {kilo}"
        );
    }
    let rows =
        |kind: &str| format!("return document.querySelectorAll('#history-{kind} tbody tr').length");
    assert_eq!(eval(browser, &rows("db_snapshot")).await, 3, "{kilo}");
    assert_eq!(eval(browser, &rows("checkpoint")).await, 3);
    assert_eq!(eval(browser, &rows("memory")).await, 2);
    let memory = text(browser, "#history-memory").await;
    assert!(
        memory.contains("plan v2") && memory.contains("current"),
        "{memory}"
    );
    let pins = text(browser, "#pins").await;
    assert!(
        pins.contains("point-1") && pins.contains("point-2"),
        "{pins}"
    );
    assert!(text(browser, "#forked-from").await.contains("Not a fork"));
    assert!(
        text(browser, "#actions-read-only")
            .await
            .contains("read-only")
    );
    let offered = eval(
        browser,
        "return document.querySelectorAll('#restore-form, #fork-form, [data-restore], button[data-pin], #confirm').length",
    )
    .await;
    assert_eq!(offered, 0, "a read-only token is offered no action");
    for (route, body) in [
        ("restore", json!({"seq": 1, "fence": true})),
        ("fork", json!({"point": {"seq": 1}, "agent": "sneaky"})),
    ] {
        let refused = post_from_page(
            browser,
            &format!(
                "/api/towns/{}{}",
                target.town,
                path(AGENT, &format!("/{route}"))
            ),
            &body,
        )
        .await;
        assert_eq!(refused["status"], 403, "{route}: {refused}");
        assert_eq!(refused["body"]["error"]["reason"], "read_only", "{refused}");
    }
    assert_eq!(checkpoint_step(target, AGENT), 3, "nothing changed");
    let shot = screenshot(browser, "history.png").await;
    println!("history screenshot: {}", shot.display());
}

/// POSTs `body` to `url` with the page's own token, as a hand-made call
/// from the page would; the status and body of the answer.
async fn post_from_page(browser: &Client, url: &str, body: &Value) -> Value {
    let script = "const [url, body, done] = arguments; \
        fetch(url, {method: 'POST', body: JSON.stringify(body), headers: { \
          Authorization: 'Bearer ' + sessionStorage.getItem('stasis.operator.token'), \
          'Content-Type': 'application/json'}}) \
        .then(async r => done({status: r.status, body: await r.json()}), e => done({error: String(e)}))";
    browser
        .execute_async(script, vec![json!(url), body.clone()])
        .await
        .expect("the page's call")
}

/// Signs in with a token that may write, restores to seq 1 (refused while
/// a container is alive, then fenced), undoes it, and forks at seq 2.
pub async fn restores_undoes_and_forks(browser: &Client, target: &Target) {
    click(browser, "#sign-out").await;
    let writer = tokens::writer_by_cli(&target.secret, &target.town);
    sign_in(browser, &writer, &target.town).await;
    until(
        browser,
        "the town view",
        "return document.getElementById('town-view')",
    )
    .await;
    open(browser, target, AGENT).await;
    assert!(!text(browser, "#who").await.contains("read-only"));

    // A version's restore asks first, and Cancel does nothing.
    click(browser, "#history-checkpoint [data-restore]").await;
    let asked = text(browser, "#confirm-text").await;
    assert!(asked.contains("of checkpoint"), "{asked}");
    click(browser, "#confirm-cancel").await;
    until(
        browser,
        "the confirmation closed",
        "return document.getElementById('confirm').hidden",
    )
    .await;

    // A live container holds the town's agents: refused until fenced.
    call(
        target,
        "POST",
        "/heartbeat",
        Some(json!({"container_id": "container-2"})),
    );
    type_into(browser, "#restore-seq", "1").await;
    click(browser, "#restore-form button[type=submit]").await;
    click(browser, "#confirm-go").await;
    let refusal = until(browser, "the agent_live refusal", &shown_error()).await;
    let refusal = refusal.as_str().unwrap_or_default();
    // The contract's message, and the way out: the fence, chosen explicitly.
    assert!(
        refusal.contains("409 agent_live") && refusal.contains("a live container holds the agent"),
        "{refusal}"
    );
    assert!(
        refusal.contains("Tick “Fence the live container”"),
        "{refusal}"
    );
    let fence = "const f = document.getElementById('fence'); \
        return !f.checked && f.parentElement.classList.contains('attention')";
    assert_eq!(
        eval(browser, fence).await,
        true,
        "the fence is offered, not chosen"
    );
    assert_eq!(
        checkpoint_step(target, AGENT),
        3,
        "a refused restore changes nothing"
    );
    let shot = screenshot(browser, "agent-live.png").await;
    println!("agent_live screenshot: {}", shot.display());
    click(browser, "#fence").await;
    click(browser, "#confirm-go").await;
    let flash = until(
        browser,
        "the restore's outcome",
        &flash_containing("Restored to seq 1"),
    )
    .await;
    assert!(
        flash.as_str().is_some_and(|f| f.contains("restore-undo-4")),
        "{flash}"
    );
    assert_eq!(checkpoint_step(target, AGENT), 1, "restored");
    assert_eq!(
        text(browser, "#history-db_snapshot tr.current .size").await,
        "16.0 KiB"
    );
    until(
        browser,
        "the stasis.restored event",
        &tail_row_of(4, "stasis.restored"),
    )
    .await;
    let shot = screenshot(browser, "restored.png").await;
    println!("restore screenshot: {}", shot.display());

    // Undo, with its pin; the fence is chosen again (the container may live on).
    click(browser, "button[data-pin='restore-undo-4']").await;
    assert!(
        text(browser, "#confirm-text")
            .await
            .contains("before that restore")
    );
    click(browser, "#fence").await;
    click(browser, "#confirm-go").await;
    until(
        browser,
        "the undo's outcome",
        &flash_containing("Restored to seq 3"),
    )
    .await;
    assert_eq!(checkpoint_step(target, AGENT), 3, "undone");
    assert_eq!(
        text(browser, "#history-db_snapshot tr.current .size").await,
        "64.0 KiB"
    );
    until(
        browser,
        "the undo's event",
        &tail_row_of(5, "stasis.restored"),
    )
    .await;

    forks(browser, target).await;
}

async fn forks(browser: &Client, target: &Target) {
    type_into(browser, "#fork-agent", FORK).await;
    type_into(browser, "#fork-seq", "2").await;
    click(browser, "#fork-form button[type=submit]").await;
    assert!(
        text(browser, "#confirm-text")
            .await
            .contains(&format!("{RIG}/{FORK}"))
    );
    click(browser, "#confirm-go").await;
    until(
        browser,
        "the fork's view",
        &flash_containing(&format!("into {RIG}/{FORK}")),
    )
    .await;
    let from = text(browser, "#forked-from").await;
    assert!(
        from.contains(&format!("{RIG}/{AGENT}")) && from.contains("at seq 2"),
        "{from}"
    );
    assert_eq!(
        checkpoint_step(target, FORK),
        2,
        "the fork has seq 2's state"
    );
    assert_eq!(
        text(browser, "#history-db_snapshot tr.current .size").await,
        "32.0 KiB"
    );
    let shot = screenshot(browser, "fork.png").await;
    println!("fork screenshot: {}", shot.display());
    click(browser, "#forked-from a").await;
    let forks = text(browser, &format!("#forks tr[data-fork='{RIG}/{FORK}']")).await;
    assert!(forks.contains('2'), "{forks}");
}

async fn click(browser: &Client, css: &str) {
    let element = browser
        .wait()
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"));
    element
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

async fn type_into(browser: &Client, css: &str, value: &str) {
    let field = browser
        .wait()
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"));
    field.clear().await.expect("clear a field");
    field.send_keys(value).await.expect("type into a field");
}

fn shown_error() -> String {
    "const e = document.getElementById('action-error'); return e && !e.hidden && e.textContent"
        .to_owned()
}

fn flash_containing(words: &str) -> String {
    format!(
        "const e = document.getElementById('flash'); \
         return e && e.textContent.includes({}) && e.textContent",
        json!(words)
    )
}

fn tail_row_of(seq: u64, kind: &str) -> String {
    format!(
        "const r = document.querySelector(\"#tail-table tr[data-seq='{seq}']\"); \
         return r !== null && r.textContent.includes('{kind}')"
    )
}
