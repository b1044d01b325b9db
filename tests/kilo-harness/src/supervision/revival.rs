//! The whole container killed mid-reply, and the next container's one command bringing the
//! agents back by itself: the cut reply finished with one continuation carrying the text
//! stasis holds, and the Mayor message posted while no container lived delivered once.

use super::container::Entrypoint;
use super::log::{last_seq, number, poll};
use super::waits::{self, Started, alive, wait_started};
use super::workspace::{self, WorkTree};
use super::{MAYOR, PROMPT_LONG, RIG, Stage, SupervisionReport};
use crate::story::checks::{self, CutReply};
use crate::story::resume::{CONTINUATION_MARK, GAP_NOTE, REPLY_CONTINUED, REPLY_GAP};
use crate::{KiloApi, KiloMessage, ModelRequest};
use anyhow::{Context, Result, ensure};
use std::time::{Duration, Instant};

/// How long a start or a turn may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);
/// The pieces of the reply stasis must hold before the kill.
const DELTAS_BEFORE_KILL: usize = 3;

/// When the container after K began: its `up` started then.
pub(super) struct Began {
    pub(super) at: Instant,
    /// The same instant on the wall clock (epoch ms), to compare with the log's times.
    pub(super) at_ms: u64,
    /// The model's requests by then.
    pub(super) model_requests: usize,
    /// The Mayor's last seq by then.
    pub(super) mayor_mark: u64,
}

/// What the killed container left: the cut reply as stasis holds it.
pub(super) struct Killed {
    pub(super) cut: CutReply,
    pub(super) mayor_session: String,
    /// The polecat's working folder as K left it.
    pub(super) polecat_tree: WorkTree,
}

/// Container K on an empty folder: `up` with no agent named brings both agents back; the Mayor
/// starts a long reply and, once stasis holds its first pieces, K is SIGKILLed whole (`up`, its
/// supervisors and both kilos at once). While no container lives, the user sends the Mayor a
/// message.
pub(super) fn act_killed(
    stage: &Stage<'_>,
    mayor_session: &str,
    polecat_session: &str,
) -> Result<Killed> {
    stage.say("4. Container K on an empty folder: up brings both back, then K is killed whole");
    waits::empty_root(stage)?;
    let marks = [
        last_seq(&stage.api, &stage.agent_path(MAYOR))?,
        last_seq(&stage.api, &stage.agent_path(super::POLECAT))?,
    ];
    let mut k = stage.up("c-sup-k", &[], &stage.work.join("k.log"))?;
    let result = (|| {
        let mayor = wait_started(stage, &mut k, MAYOR, marks[0])?;
        let polecat = wait_started(stage, &mut k, super::POLECAT, marks[1])?;
        let tree = workspace::act_polecat_works(stage, &mut k, &polecat, polecat_session)?;
        let mark = last_seq(&stage.api, &stage.agent_path(MAYOR))?;
        KiloApi::new(&mayor.url).prompt_async(mayor_session, PROMPT_LONG)?;
        let path = stage.agent_path(MAYOR);
        poll(
            "stasis to hold the long reply's first pieces",
            WITHIN,
            || alive(&mut k),
            || {
                let deltas = stage
                    .api
                    .events_after(&path, mark)?
                    .into_iter()
                    .filter(|e| e.kind == "message.part.delta")
                    .count();
                Ok((deltas >= DELTAS_BEFORE_KILL).then_some(()))
            },
        )?;
        kill_whole(&mut k, &[&mayor, &polecat])?;
        let cut = checks::cut_reply(&stage.api.events_after(&path, mark)?)?;
        stage.say(&format!(
            "   kill -9 of the whole of K mid-reply: stasis holds {} pieces of it: {:?}",
            cut.deltas, cut.text
        ));
        Ok((cut, tree))
    })();
    let (cut, polecat_tree) = result.map_err(|e| k.with_output(&e))?;
    let answer = stage.api.post_mayor_message(&stage.town, GAP_NOTE)?;
    stage.say(&format!(
        "   no container lives: POST /mayor/message answered {answer}"
    ));
    Ok(Killed {
        cut,
        mayor_session: mayor_session.to_owned(),
        polecat_tree,
    })
}

/// SIGKILL to every process of the container at once; its kilos must be gone after.
fn kill_whole(container: &mut Entrypoint, kilos: &[&Started]) -> Result<()> {
    container.kill_all()?;
    let status = container.wait(Duration::from_secs(30))?;
    ensure!(!status.success(), "K's up was killed, yet exited {status}");
    for kilo in kilos {
        ensure!(
            waits::gone_soon(kilo.pid),
            "K's kilo (pid {}) outlived the kill",
            kilo.pid
        );
    }
    Ok(())
}

/// On the container after K (its `up` started at `began`, its Mayor at `mayor`): the cut reply
/// is finished by itself with exactly one continuation carrying the text stasis held, and the
/// message posted while no container lived goes into the restored session once, answered.
pub(super) fn check_revived(
    stage: &Stage<'_>,
    container: &mut Entrypoint,
    mayor: &Started,
    killed: &Killed,
    began: &Began,
    report: &mut SupervisionReport,
) -> Result<()> {
    let (started, before) = (began.at, began.model_requests);
    let model = stage.model;
    report.revived_to_continuation = poll(
        "the continuation to reach the model",
        WITHIN,
        || alive(container),
        || {
            let requests = model.requests();
            let found = continuations(&requests[before..], &killed.cut.text)
                .next()
                .is_some();
            Ok(found.then(|| started.elapsed()))
        },
    )?;
    report.revived_kilo_start = mayor.ready;
    report.revived_stasis_share = stasis_share(stage, began)?;
    let api = KiloApi::new(&mayor.url);
    let messages = poll(
        "the Mayor's session to end with the gap message's reply",
        WITHIN,
        || alive(container),
        || {
            let messages = api.messages(&killed.mayor_session)?;
            let done = messages.last().is_some_and(|m| {
                checks::is_finished(m) && m.info.role == "assistant" && m.text() == REPLY_GAP
            });
            Ok(done.then_some(messages))
        },
    )?;
    let requests = model.requests();
    let sent = continuations(&requests[before..], &killed.cut.text).count();
    ensure!(
        sent == 1,
        "the model got {sent} continuations carrying the Mayor's streamed text {:?}, not one",
        killed.cut.text
    );
    let replied = messages.iter().any(|m| {
        m.info.role == "assistant" && checks::is_finished(m) && m.text() == REPLY_CONTINUED
    });
    ensure!(
        replied,
        "the continuation got no finished reply:\n{}",
        show(&messages)
    );
    let in_session = messages
        .iter()
        .filter(|m| m.info.role == "user" && m.text().starts_with(GAP_NOTE))
        .count();
    let asked = requests[before..]
        .iter()
        .filter(|r| {
            !r.is_title_request() && r.last_user_text().is_some_and(|t| t.starts_with(GAP_NOTE))
        })
        .count();
    ensure!(
        in_session == 1 && asked == 1,
        "the gap's message is in the session {in_session} time(s) and was asked {asked} \
         time(s), not once:\n{}",
        show(&messages)
    );
    report.recovered = show(&messages);
    stage.say(&format!(
        "   ✓ the continuation reached the model {:.1?} after up began (kilo's own start {:.1?}, \
         stasis's share {:.0?}); one continuation carried the streamed text, its reply finished \
         the cut turn; the gap's message went in once, answered. The Mayor's session \
         ({RIG}/{MAYOR}):\n{}",
        report.revived_to_continuation,
        report.revived_kilo_start,
        report.revived_stasis_share,
        report.recovered
    ));
    Ok(())
}

/// stasis's own part of the container's `up` → the continuation sent, from the Mayor's log:
/// everything but kilo's start (spawn → its listening line, `ready_ms`) and kilo's answer to
/// the sidecar's `GET /event` (its first request after a start: the instance bootstrap, which
/// kilo alone pays on its first prompt too). That is `up` began → kilo spawned (boot,
/// hydration, the supervisor's start), kilo listening → `/event` asked for (the sidecar's
/// start), and `/event` answered → the cut reply's decision stored (the ready hook, resume's
/// reads; the continuation is posted right after). The decision's time is stasis's
/// `created_at`, on the same machine's clock.
fn stasis_share(stage: &Stage<'_>, began: &Began) -> Result<Duration> {
    let events = stage
        .api
        .events_after(&stage.agent_path(MAYOR), began.mayor_mark)?;
    let start = events
        .iter()
        .position(|e| e.kind == "stasis.runtime.started")
        .context("A2's Mayor has no stasis.runtime.started")?;
    let at = |pointer: &str| {
        number(&events[start], pointer)
            .with_context(|| format!("A2's stasis.runtime.started has no {pointer}"))
    };
    let spawned = at("/spawned_at_ms")?;
    let listening = spawned + at("/ready_ms")?;
    let since_start = &events[start..];
    let stream = since_start
        .iter()
        .find(|e| e.kind == "stasis.sidecar.resync")
        .context("no stasis.sidecar.resync after A2's start")?;
    let requested = number(stream, "/stream/requested_ms").context("no stream.requested_ms")?;
    let answered = number(stream, "/stream/answered_ms").context("no stream.answered_ms")?;
    let decided = since_start
        .iter()
        .find(|e| e.kind == "stasis.resume.cut_reply")
        .and_then(|e| e.created_at)
        .context("no stasis.resume.cut_reply after A2's start")?;
    let span = |from: u64, to: u64, what: &str| {
        to.checked_sub(from)
            .with_context(|| format!("{what}: {from} ms → {to} ms runs backwards"))
    };
    let share = span(began.at_ms, spawned, "up began → kilo spawned")?
        + span(listening, requested, "kilo listening → /event asked for")?
        + span(answered, decided, "/event answered → the cut reply decided")?;
    Ok(Duration::from_millis(share))
}

/// The chat requests whose last user message is a continuation carrying `streamed` (the
/// polecat, whose session K cut too, may get one of its own).
fn continuations<'r>(
    requests: &'r [ModelRequest],
    streamed: &'r str,
) -> impl Iterator<Item = &'r ModelRequest> {
    requests.iter().filter(move |r| {
        !r.is_title_request()
            && r.last_user_text()
                .is_some_and(|t| t.contains(CONTINUATION_MARK) && t.contains(streamed))
    })
}

fn show(messages: &[KiloMessage]) -> String {
    crate::story::resume::show_messages(messages)
}
