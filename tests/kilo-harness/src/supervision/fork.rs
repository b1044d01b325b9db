//! Act 6: the Mayor forked at its first turn. The point is taken in act 1, once the snapshot
//! that turn's end pushed covers it (so kilo.db as of the point holds that turn and not the
//! next). At the end, the fork (`stasis-client fork`) is started by container C's `up` as an
//! agent of its own: its kilo lists the session up to that turn only, and a new prompt makes
//! kilo send the model that shorter history, while the source's log keeps every later turn.

use super::commands::turn;
use super::log::{get_json, last_seq, poll};
use super::waits::{empty_root, gone_soon, wait_started};
use super::{MAYOR, PROMPT_BACK, PROMPT_PLAN, REPLY_PLAN, RIG, Stage};
use crate::KiloApi;
use anyhow::{Context, Result, ensure};
use std::process::Command;
use std::time::Duration;

/// The fork's id and role (a town has one mayor: its fork is a `mayor-fork`).
pub(super) const FORK: &str = "mayor-fork";
/// The prompt the fork gets, and its reply.
pub(super) const PROMPT_FORK: &str = "Which item of the plan comes first?";
/// See [`PROMPT_FORK`].
pub(super) const REPLY_FORK: &str = "The release notes come first.";

/// How long a write or a start may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);

/// The Mayor's seq once the snapshot its first turn's end pushed covers that turn, pinned: the
/// point the fork is taken at.
pub(super) fn point_after_first_turn(stage: &Stage<'_>) -> Result<u64> {
    let path = stage.agent_path(MAYOR);
    let idle = poll(
        "the first turn's session.idle in the log",
        WITHIN,
        || Ok(()),
        || {
            Ok(stage
                .api
                .events_after(&path, 0)?
                .iter()
                .find(|e| e.kind == "session.idle")
                .map(|e| e.seq))
        },
    )?;
    poll(
        "a snapshot covering the first turn",
        WITHIN,
        || Ok(()),
        || {
            Ok(stage
                .api
                .snapshot_watermark(&path)?
                .filter(|watermark| *watermark >= idle))
        },
    )?;
    let point = last_seq(&stage.api, &path)?;
    // Pinned, as a user keeps a point to come back to: CI's retention keeps every version for
    // 30 s only, then the last of each hour, and the fork comes minutes later.
    stage.api.pin(&path, "first-turn", point)?;
    Ok(point)
}

/// Forks the Mayor at `point`, starts the fork in container C, and checks its session and its
/// model request; `mayor_session` is the source's kilo session.
pub(super) fn act_fork(stage: &Stage<'_>, point: u64, mayor_session: &str) -> Result<()> {
    stage.say(&format!(
        "6. The Mayor forked at seq {point} (its first turn) into {RIG}/{FORK}; container C's up starts the fork"
    ));
    let forked = Command::new(&stage.options.client_bin)
        .args([
            "fork",
            "--town",
            &stage.town,
            "--rig",
            RIG,
            "--agent",
            MAYOR,
        ])
        .args(["--seq", &point.to_string(), "--to-agent", FORK])
        .env("STASIS_URL", stage.api.base())
        .env("STASIS_TOKEN", stage.api.token())
        .output()?;
    ensure!(forked.status.success(), "stasis-client fork: {forked:?}");
    let record = get_json(&stage.api, &stage.agent_path(FORK))?;
    let lineage = record.get("forked_from").cloned().unwrap_or_default();
    ensure!(
        lineage.get("agent").and_then(serde_json::Value::as_str) == Some(MAYOR)
            && lineage.get("seq").and_then(serde_json::Value::as_u64) == Some(point),
        "the fork's record names its source: {record}"
    );
    let fork_seq = last_seq(&stage.api, &stage.agent_path(FORK))?;
    ensure!(
        fork_seq == point,
        "the fork's log ends at the point: {fork_seq}, not {point}"
    );
    stage.say(&format!(
        "   ✓ lineage: forked_from {lineage}; its log is events 1..{point}"
    ));

    empty_root(stage)?;
    let agent = format!("{RIG}/{FORK}:{FORK}");
    let mut c = stage.up("c-sup-c", &[&agent], &stage.work.join("c.log"))?;
    let result = (|| {
        let fork = wait_started(stage, &mut c, FORK, fork_seq)?;
        let api = KiloApi::new(&fork.url);
        let listed: Vec<(String, String)> = api
            .messages(mayor_session)?
            .iter()
            .map(|m| (m.info.role.clone(), m.text()))
            .collect();
        let first_turn_only = matches!(
            listed.as_slice(),
            [(user, asked), (assistant, replied)]
                if user == "user" && asked.contains(PROMPT_PLAN)
                    && assistant == "assistant" && replied == REPLY_PLAN
        );
        ensure!(
            first_turn_only,
            "the fork's kilo lists its session up to the first turn only: {listed:?}"
        );
        stage.say(&format!(
            "   ✓ the fork's kilo (pid {}) lists the session up to the first turn: {listed:?}",
            fork.pid
        ));
        let before = stage.model.requests().len();
        turn(&fork.url, mayor_session, PROMPT_FORK)?;
        check_shorter_history(stage, before)?;
        let answered = api
            .messages(mayor_session)?
            .last()
            .is_some_and(|m| m.info.role == "assistant" && m.text() == REPLY_FORK);
        ensure!(answered, "the fork answered the new prompt");
        poll(
            "the fork's new turn in its own log",
            WITHIN,
            || Ok(()),
            || {
                let turns = stage.api.conversation(&stage.agent_path(FORK))?.turns;
                Ok(turns
                    .iter()
                    .any(|t| t.role == "assistant" && t.content.contains(REPLY_FORK))
                    .then_some(()))
            },
        )?;
        let source = stage.api.conversation(&stage.agent_path(MAYOR))?;
        ensure!(
            source.turns.iter().any(|t| t.content.contains(PROMPT_BACK)),
            "the source's conversation keeps its later turns"
        );
        stage.say(
            "   ✓ a new prompt made the fork's kilo send the model the first turn and not the \
             later ones; the turn is in the fork's own log, and the source's keeps its later \
             turns",
        );
        let pid = fork.pid;
        c.terminate();
        let status = c.wait(Duration::from_secs(150))?;
        ensure!(status.success(), "C's up exited {status} after SIGTERM");
        ensure!(
            gone_soon(pid),
            "C's kilo (pid {pid}) outlived its container"
        );
        Ok(())
    })();
    result.map_err(|e| c.with_output(&e))
}

/// The model's request for [`PROMPT_FORK`] carries the first turn and none of the later ones.
fn check_shorter_history(stage: &Stage<'_>, before: usize) -> Result<()> {
    let requests = stage.model.requests();
    let request = requests[before..]
        .iter()
        .find(|r| {
            !r.is_title_request() && r.last_user_text().is_some_and(|t| t.contains(PROMPT_FORK))
        })
        .context("the model got no request for the fork's prompt")?;
    let texts: Vec<&str> = request
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| m.text.as_str())
        .collect();
    ensure!(
        texts.iter().any(|t| t.contains(PROMPT_PLAN)),
        "the fork's request carries the first turn: {texts:?}"
    );
    ensure!(
        !texts.iter().any(|t| t.contains(PROMPT_BACK)),
        "the fork's request carries a turn after the point: {texts:?}"
    );
    Ok(())
}
