//! The acts of [`super`] but the revival's, each with its checks.

use super::commands::{git, turn};
use super::container::Entrypoint;
use super::fork;
use super::log::{data, epoch_ms, get_json, last_seq, number, poll, supervisor_events};
use super::revival::{self, Killed};
use super::waits::{alive, empty_root, gone_soon, wait_listening, wait_started};
use super::{
    MAYOR, NUDGE_START, POLECAT, PROMPT_BACK, PROMPT_FIX, PROMPT_PLAN, PROMPT_STALL, REPLY_PLAN,
    RIG, Stage, SupervisionReport, TURN_DEADLINE,
};
use crate::{EventStream, KiloApi};
use anyhow::{Context, Result, ensure};
use rustix::process::{Pid, Signal, kill_process_group};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// How long a start, a turn, or a log write may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);

pub(super) fn play(stage: &Stage<'_>, report: &mut SupervisionReport) -> Result<()> {
    let remote = prepare_polecat_worktree(stage)?;
    stage.say(&format!(
        "1. Container A: stasis-client up (town {})",
        stage.town
    ));
    let mut a = stage.up(
        "c-sup-a",
        &["hq/mayor:mayor", "hq/polecat:polecat"],
        &stage.work.join("a.log"),
    )?;
    let sessions = act_crash(stage, &mut a, report).map_err(|e| a.with_output(&e))?;
    act_deadline(stage, &mut a, &sessions, report).map_err(|e| a.with_output(&e))?;
    act_evict(stage, &mut a, &remote, report).map_err(|e| a.with_output(&e))?;
    drop(a);
    for pid in &sessions.pids {
        ensure!(
            gone_soon(*pid),
            "A's kilo (pid {pid}) outlived its container"
        );
    }
    let killed = revival::act_killed(stage, &sessions.mayor, &sessions.polecat)?;
    act_fenced(stage, &killed, report)?;
    fork::act_fork(stage, sessions.fork_point, &sessions.mayor)
}

/// The agents' sessions and their live kilos.
struct Sessions {
    mayor: String,
    /// The Mayor's seq after its first turn, covered by a snapshot: act 6 forks it there.
    fork_point: u64,
    polecat: String,
    polecat_url: String,
    pids: Vec<i32>,
}

fn act_crash(
    stage: &Stage<'_>,
    a: &mut Entrypoint,
    report: &mut SupervisionReport,
) -> Result<Sessions> {
    let mayor = wait_started(stage, a, MAYOR, 0)?;
    let polecat = wait_started(stage, a, POLECAT, 0)?;
    stage.say(&format!(
        "   supervisors started kilo for the Mayor (pid {}, {}) and the polecat (pid {}, {})",
        mayor.pid, mayor.url, polecat.pid, polecat.url
    ));
    let mayor_session = KiloApi::new(&mayor.url).create_session()?;
    turn(&mayor.url, &mayor_session, PROMPT_PLAN)?;
    let polecat_session = KiloApi::new(&polecat.url).create_session()?;
    turn(&polecat.url, &polecat_session, PROMPT_FIX)?;
    stage.say("   one turn each, through kilo's own API");
    wait_registered(stage, a, MAYOR, &mayor_session, &mayor.url)?;
    stage.say("   the registry names the Mayor's session and port");

    let fork_point = fork::point_after_first_turn(stage)?;
    let mark = last_seq(&stage.api, &stage.agent_path(MAYOR))?;
    let killed = Instant::now();
    let killed_at = SystemTime::now();
    let group = Pid::from_raw(mayor.pid).context("the Mayor's pid")?;
    kill_process_group(group, Signal::KILL).context("kill -9 of the Mayor's kilo")?;
    stage.say(&format!(
        "   kill -9 of the Mayor's kilo serve (pid {}) alone",
        mayor.pid
    ));
    // Served: the new kilo answers the session, whether or not its sidecar follows yet.
    let back = wait_listening(stage, a, MAYOR, mark)?;
    let api = KiloApi::new(&back.url);
    poll(
        "the Mayor's session served again",
        WITHIN,
        || alive(a),
        || {
            Ok(api
                .messages(&mayor_session)
                .ok()
                .filter(|m| m.len() >= 2)
                .map(drop))
        },
    )?;
    report.crash_to_served = killed.elapsed();
    report.kilo_start = back.ready;
    let killed_at_ms = epoch_ms(killed_at);
    let spawned_at_ms = back
        .spawned_at_ms
        .context("the restart's stasis.runtime.started has no spawned_at_ms")?;
    report.kill_to_respawn = Duration::from_millis(spawned_at_ms.saturating_sub(killed_at_ms));
    wait_started(stage, a, MAYOR, mark)?;
    let events = supervisor_events(&stage.api, &stage.agent_path(MAYOR), mark)?;
    let exited = find(&events, "stasis.runtime.exited")?;
    let exited_at_ms = number(exited, "/exited_at_ms")
        .context("the restart's stasis.runtime.exited has no exited_at_ms")?;
    report.kill_to_exit = Duration::from_millis(exited_at_ms.saturating_sub(killed_at_ms));
    ensure!(
        number(exited, "/signal") == Some(9),
        "the exit records SIGKILL: {}",
        exited.data.get()
    );
    let restarting = find(&events, "stasis.runtime.restarting")?;
    // The new kilo was spawned while the old sidecar flushed, yet its start is logged after.
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    ensure!(
        kinds.starts_with(&[
            "stasis.runtime.exited",
            "stasis.runtime.restarting",
            "stasis.runtime.started"
        ]),
        "the restart's events in order: {kinds:?}"
    );
    report.restart_delay = Duration::from_millis(number(restarting, "/delay_ms").unwrap_or(0));
    stage.say(&format!(
        "   ✓ restarted in A as pid {} on the same home: session served again {:.2?} after the kill \
         (spawned {:.0?} after it, its exit collected after {:.0?}; kilo's own start {:.2?}, \
         restart delay {:.0?})",
        back.pid,
        report.crash_to_served,
        report.kill_to_respawn,
        report.kill_to_exit,
        report.kilo_start,
        report.restart_delay
    ));
    let before = stage.model.requests().len();
    turn(&back.url, &mayor_session, PROMPT_BACK)?;
    check_history(stage, before)?;
    stage.say("   ✓ the next prompt made kilo send the model the turn before the crash");
    Ok(Sessions {
        mayor: mayor_session,
        fork_point,
        polecat: polecat_session,
        polecat_url: polecat.url,
        pids: vec![back.pid, polecat.pid],
    })
}

fn act_deadline(
    stage: &Stage<'_>,
    a: &mut Entrypoint,
    sessions: &Sessions,
    report: &mut SupervisionReport,
) -> Result<()> {
    stage.say(&format!(
        "2. A polecat turn whose model stalls, with a {TURN_DEADLINE:?} turn deadline"
    ));
    let path = stage.agent_path(POLECAT);
    let mark = last_seq(&stage.api, &path)?;
    let events = EventStream::open(&sessions.polecat_url)?;
    let from = events.len();
    let asked = Instant::now();
    KiloApi::new(&sessions.polecat_url).prompt_async(&sessions.polecat, PROMPT_STALL)?;
    let aborted = poll(
        "stasis.turn.aborted",
        WITHIN,
        || alive(a),
        || {
            let found = supervisor_events(&stage.api, &path, mark)?;
            Ok(found.into_iter().find(|e| e.kind == "stasis.turn.aborted"))
        },
    )?;
    report.stalled_turn_aborted_after = asked.elapsed();
    events.wait_for_idle(&sessions.polecat, from, WITHIN)?;
    // busy_ms is truncated to whole milliseconds: 25000.4 ms past a 25 s deadline reads 25000.
    let busy = Duration::from_millis(number(&aborted, "/busy_ms").unwrap_or(0));
    ensure!(
        busy >= TURN_DEADLINE && aborted.session_id.as_deref() == Some(sessions.polecat.as_str()),
        "the abort names the session, past the deadline: {}",
        aborted.data.get()
    );
    stage.say(&format!(
        "   ✓ aborted after {busy:.0?} busy (POST /session/{{id}}/abort), kilo idle again"
    ));
    Ok(())
}

fn act_evict(
    stage: &Stage<'_>,
    a: &mut Entrypoint,
    remote: &Path,
    report: &mut SupervisionReport,
) -> Result<()> {
    stage.say("3. SIGTERM to container A");
    let worktree = stage.root.join("agent-home-polecat/work");
    std::fs::write(worktree.join("notes.txt"), "the typo, fixed\n")?;
    let marks = [
        last_seq(&stage.api, &stage.agent_path(MAYOR))?,
        last_seq(&stage.api, &stage.agent_path(POLECAT))?,
    ];
    let asked = stage.model.requests().len();
    let sent = Instant::now();
    a.terminate();
    let status = a.wait(Duration::from_secs(150))?;
    report.eviction_took = sent.elapsed();
    ensure!(status.success(), "up exited {status} after SIGTERM");
    stage.say(&format!(
        "   ✓ up exited 0, {:.1?} after SIGTERM",
        report.eviction_took
    ));
    let nudged = stage.model.requests()[asked..]
        .iter()
        .any(|r| r.last_user_text().is_some_and(|t| t.contains(NUDGE_START)));
    ensure!(nudged, "the polecat's nudge never reached the model");
    stage.say("   ✓ the polecat's nudge reached the model");
    let phases = ["notice", "nudge", "wait", "abort", "save", "stop", "flush"];
    for (agent, mark) in [MAYOR, POLECAT].into_iter().zip(marks) {
        let path = stage.agent_path(agent);
        let events = supervisor_events(&stage.api, &path, mark)?;
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        let expected: Vec<String> = phases
            .iter()
            .map(|p| format!("stasis.eviction.{p}"))
            .collect();
        ensure!(kinds == expected, "{agent}'s eviction phases: {kinds:?}");
        let nudge = data(find(&events, "stasis.eviction.nudge")?);
        let sent = nudge.get("sent").and_then(serde_json::Value::as_bool);
        ensure!(sent == Some(agent == POLECAT), "{agent}'s nudge: {nudge}");
        check_watermark(stage, agent)?;
    }
    let polecat = supervisor_events(&stage.api, &stage.agent_path(POLECAT), marks[1])?;
    let save = data(find(&polecat, "stasis.eviction.save")?);
    ensure!(
        save.get("code").and_then(serde_json::Value::as_i64) == Some(0),
        "save: {save}"
    );
    let subject = git(remote, &["log", "-1", "--format=%s"])?;
    let notes = git(remote, &["show", "HEAD:notes.txt"])?;
    ensure!(
        subject.trim() == "WIP: container eviction save" && notes == "the typo, fixed\n",
        "the remote's head: {subject:?}, notes.txt {notes:?}"
    );
    stage.say(
        "   ✓ every phase in each agent's log, the Mayor not nudged; the save command pushed \
               the polecat's edit; each last snapshot covers its agent's last event",
    );
    Ok(())
}

fn act_fenced(stage: &Stage<'_>, killed: &Killed, report: &mut SupervisionReport) -> Result<()> {
    stage.say("5. Container A2 on an empty folder: up with no agent named");
    empty_root(stage)?;
    let marks = [
        last_seq(&stage.api, &stage.agent_path(MAYOR))?,
        last_seq(&stage.api, &stage.agent_path(POLECAT))?,
    ];
    let began = revival::Began {
        at: Instant::now(),
        at_ms: epoch_ms(SystemTime::now()),
        model_requests: stage.model.requests().len(),
        mayor_mark: marks[0],
    };
    let mut a2 = stage.up("c-sup-a2", &[], &stage.work.join("a2.log"))?;
    let result = (|| {
        let mayor = wait_started(stage, &mut a2, MAYOR, marks[0])?;
        let polecat = wait_started(stage, &mut a2, POLECAT, marks[1])?;
        super::workspace::check_restored(stage, &killed.polecat_tree)?;
        let messages = KiloApi::new(&mayor.url).messages(&killed.mayor_session)?;
        ensure!(
            messages.len() >= 4,
            "the Mayor's hydrated session: {} messages",
            messages.len()
        );
        stage.say("   ✓ both agents of the registry back, the Mayor's session hydrated");
        revival::check_revived(stage, &mut a2, &mayor, killed, &began, report)?;
        let booted = Command::new(&stage.options.client_bin)
            .args([
                "boot",
                "--town",
                &stage.town,
                "--container-id",
                "c-sup-b",
                "--root",
            ])
            .arg(stage.work.join("b"))
            .env("STASIS_URL", stage.api.base())
            .env("STASIS_TOKEN", stage.api.token())
            .output()?;
        ensure!(booted.status.success(), "container B's boot: {booted:?}");
        let heartbeat = Instant::now();
        let status = a2.wait(Duration::from_secs(30))?;
        report.fenced_exit_after = heartbeat.elapsed();
        ensure!(
            status.code() == Some(9),
            "A2's up exited {status}, not 9 (fenced)"
        );
        for pid in [mayor.pid, polecat.pid] {
            ensure!(gone_soon(pid), "A2's kilo (pid {pid}) outlived the fence");
        }
        stage.say(&format!(
            "   ✓ container B heartbeat: A2's supervisors killed their kilos, up exited 9 after {:.1?}",
            report.fenced_exit_after
        ));
        Ok(())
    })();
    result.map_err(|e| a2.with_output(&e))
}

fn wait_registered(
    stage: &Stage<'_>,
    a: &mut Entrypoint,
    agent: &str,
    session: &str,
    url: &str,
) -> Result<()> {
    let port: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .context("a port")?;
    let path = format!("/api/towns/{}/container-registry", stage.town);
    poll(
        "the registry to name the session and port",
        WITHIN,
        || alive(a),
        || {
            let registry = get_json(&stage.api, &path)?;
            let agents = registry.get("agents").and_then(serde_json::Value::as_array);
            let found = agents.into_iter().flatten().any(|entry| {
                entry.get("agent_id").and_then(serde_json::Value::as_str) == Some(agent)
                    && entry.get("rig_id").and_then(serde_json::Value::as_str) == Some(RIG)
                    && entry.get("session_id").and_then(serde_json::Value::as_str) == Some(session)
                    && entry.get("port").and_then(serde_json::Value::as_u64)
                        == Some(u64::from(port))
            });
            Ok(found.then_some(()))
        },
    )
}

/// The model's request for [`PROMPT_BACK`] carries the turn before the crash.
fn check_history(stage: &Stage<'_>, before: usize) -> Result<()> {
    let requests = stage.model.requests();
    let request = requests[before..]
        .iter()
        .find(|r| {
            !r.is_title_request() && r.last_user_text().is_some_and(|t| t.contains(PROMPT_BACK))
        })
        .context("no model request for the prompt after the crash")?;
    let texts: Vec<(&str, &str)> = request
        .messages
        .iter()
        .filter(|m| m.role != "system")
        .map(|m| (m.role.as_str(), m.text.as_str()))
        .collect();
    let plan = texts
        .iter()
        .position(|(role, text)| *role == "user" && text.contains(PROMPT_PLAN));
    let reply = texts.iter().position(|t| *t == ("assistant", REPLY_PLAN));
    ensure!(
        matches!((plan, reply), (Some(p), Some(r)) if p < r),
        "the model did not get the earlier turn: {texts:?}"
    );
    Ok(())
}

/// The agent's last snapshot covers its last event: the eviction's flush pushes kilo.db once
/// every event is stored (kilo is stopped by then, and the supervisor's `flush` phase is its
/// last event), with the stored events' seq as its watermark even when kilo.db did not change.
fn check_watermark(stage: &Stage<'_>, agent: &str) -> Result<()> {
    let path = stage.agent_path(agent);
    let events = stage.api.events_after(&path, 0)?;
    let last_idle = events
        .iter()
        .rev()
        .find(|e| e.kind == "session.idle")
        .map_or(0, |e| e.seq);
    let last = events.last().map_or(0, |e| e.seq);
    let watermark = stage.api.snapshot_watermark(&path)?.unwrap_or(0);
    ensure!(
        watermark >= last,
        "{agent}'s last snapshot is at watermark {watermark}, its log at {last} (its last turn \
         ended at {last_idle})"
    );
    stage.say(&format!(
        "   {agent}: last snapshot at watermark {watermark}, the log's last event; its last turn \
         ended at {last_idle}"
    ));
    Ok(())
}

fn find<'e>(
    events: &'e [crate::story::StoredEvent],
    kind: &str,
) -> Result<&'e crate::story::StoredEvent> {
    events.iter().find(|e| e.kind == kind).with_context(|| {
        format!(
            "no {kind} among {:?}",
            events.iter().map(|e| &e.kind).collect::<Vec<_>>()
        )
    })
}

/// A bare remote and, in the polecat's home-to-be, a clone of it with one commit.
fn prepare_polecat_worktree(stage: &Stage<'_>) -> Result<std::path::PathBuf> {
    let remote = stage.work.join("remote.git");
    let worktree = stage.root.join("agent-home-polecat/work");
    std::fs::create_dir_all(&worktree)?;
    git(&stage.work, &["init", "-q", "--bare", "remote.git"])?;
    for args in [
        &["init", "-q"][..],
        &["config", "user.email", "polecat@example.com"],
        &["config", "user.name", "Polecat"],
        &["remote", "add", "origin", &remote.display().to_string()],
        &["commit", "-q", "--allow-empty", "-m", "start"],
        &["push", "-q", "origin", "HEAD"],
    ] {
        git(&worktree, args)?;
    }
    Ok(remote)
}
