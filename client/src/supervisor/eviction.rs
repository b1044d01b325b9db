//! The eviction, on SIGTERM: the seed's Tier 1.5 within the platform's 15 minutes. Each phase is
//! an event `stasis.eviction.<phase>` in the agent's log, queued through the sidecar so that the
//! last snapshot's watermark covers it:
//!
//! 1. `notice`: the town is told (`POST /container-eviction`, idempotent: every supervisor of
//!    the container sends it);
//! 2. `nudge`: the agent gets its role's message as a prompt (the Mayor gets none);
//! 3. `wait`: until that turn ends or the nudge window closes (a second signal closes it);
//! 4. `abort`: a turn still running is aborted;
//! 5. `save`: the save command runs in the agent's working folder, within its own timeout; then
//!    the agent's workspace, when one is kept, is saved (`stasis.workspace.saved`);
//! 6. `stop`: the runtime is stopped (SIGTERM, then SIGKILL after the grace, or at once once
//!    the budget is spent);
//! 7. `flush`: then the caller has the sidecar forward what it holds and push a last snapshot.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};
use serde_json::{Value, json};

use super::SuperviseOptions;
use super::journal::Journal;
use super::millis;
use super::process::Runtime;
use super::runtime_api::RuntimeApi;
use super::status::Status;
use super::workspace::Keeper;
use crate::error::Error;
use crate::http::Client;
use crate::sidecar::Log;

/// What the phases need.
pub(super) struct Eviction<'a> {
    pub(super) options: &'a SuperviseOptions,
    pub(super) client: &'a Client,
    pub(super) journal: &'a Journal,
    /// The agent's workspace, when one is kept.
    pub(super) workspace: Option<&'a Keeper>,
    pub(super) runtime: &'a Runtime,
    pub(super) api: &'a RuntimeApi,
    pub(super) status: &'a Status,
    /// The agent's session, as the supervisor knows it.
    pub(super) session: Option<String>,
    pub(super) log: &'a Log,
}

/// Where the phases left off.
pub(super) struct Phases {
    /// The end of the budget: the flush gets what is left.
    pub(super) deadline: Instant,
    /// Set when stasis fenced this container meanwhile.
    pub(super) fenced: Option<Error>,
}

/// Runs phases 1–6 and records each; `hurry` answers true once a second signal came.
pub(super) fn run(eviction: &Eviction<'_>, hurry: &mut dyn FnMut() -> bool) -> Phases {
    let deadline = Instant::now() + eviction.options.eviction.budget;
    let fenced = phases(eviction, deadline, hurry).err();
    Phases { deadline, fenced }
}

fn phases(
    e: &Eviction<'_>,
    deadline: Instant,
    hurry: &mut dyn FnMut() -> bool,
) -> Result<(), Error> {
    let options = &e.options.eviction;
    let town = e.options.agent.town();
    let notice = crate::town::evict(
        e.client,
        town,
        &e.options.container_id,
        "sigterm",
        Some(deadline.min(Instant::now() + Duration::from_secs(30))),
    );
    if let Err(error) = &notice
        && error.is_fenced()
    {
        return notice;
    }
    let data = json!({ "recorded": notice.is_ok(), "error": notice.err().map(|e| e.to_string()),
                       "budget_ms": millis(options.budget) });
    e.journal.record("stasis.eviction.notice", None, data)?;

    let session = e
        .session
        .clone()
        .or_else(|| e.status.last_session())
        .or_else(|| e.api.latest_session().ok().flatten());
    let nudge = e.options.eviction.nudges.get(&e.options.role);
    let nudged = match (nudge, &session) {
        (Some(text), Some(session)) if !text.is_empty() && e.runtime.is_running() => {
            let before = e.status.idles(session);
            let sent = e.api.prompt(session, text);
            if sent.is_ok() {
                e.status.mark_busy(session, Instant::now());
            }
            let data = json!({ "role": e.options.role, "text": text, "sent": sent.is_ok(),
                               "error": sent.as_ref().err().map(ToString::to_string) });
            e.journal
                .record("stasis.eviction.nudge", Some(session), data)?;
            sent.ok().map(|()| (session.clone(), before))
        }
        _ => {
            let reason = if nudge.is_none_or(String::is_empty) {
                format!("no nudge for the role {:?}", e.options.role)
            } else {
                "no session to nudge".to_owned()
            };
            let data = json!({ "role": e.options.role, "sent": false, "reason": reason });
            e.journal.record("stasis.eviction.nudge", None, data)?;
            None
        }
    };

    let window_end = deadline.min(Instant::now() + options.nudge_window);
    let waited = Instant::now();
    let idle = wait_idle(e, nudged.as_ref(), window_end, hurry);
    let data = json!({ "idle": idle, "waited_ms": millis(waited.elapsed()),
                       "window_ms": millis(options.nudge_window) });
    e.journal
        .record("stasis.eviction.wait", session.as_deref(), data)?;

    let busy = e.status.busy_sessions();
    let mut aborted = Vec::new();
    for session in &busy {
        if e.api.abort(session).is_ok() {
            aborted.push(session.clone());
        }
    }
    let data = json!({ "busy": busy, "aborted": aborted });
    e.journal.record("stasis.eviction.abort", None, data)?;

    if let Some(command) = &options.save_command {
        let limit = options
            .save_timeout
            .min(deadline.saturating_duration_since(Instant::now()));
        let data = save(e, command, limit);
        e.journal.record("stasis.eviction.save", None, data)?;
    }
    if let Some(workspace) = e.workspace {
        // After the save command: its WIP commit is part of what is saved.
        workspace.save_last(deadline)?;
    }

    let pid = e.runtime.pid;
    // The runtime's grace comes out of the budget too: past it, SIGKILL at once.
    let grace = options
        .stop_grace
        .min(deadline.saturating_duration_since(Instant::now()));
    let graceful = e.runtime.stop(grace);
    let data = json!({ "pid": pid, "graceful": graceful });
    e.journal.record("stasis.eviction.stop", None, data)?;
    let left = deadline.saturating_duration_since(Instant::now());
    let data = json!({ "left_ms": millis(left) });
    e.journal.record("stasis.eviction.flush", None, data)?;
    Ok(())
}

/// Waits until the nudged turn has ended (an idle after the nudge, and not busy), the runtime
/// is gone, the window closes or a second signal comes. Without a nudge: until nothing is busy.
fn wait_idle(
    e: &Eviction<'_>,
    nudged: Option<&(String, u64)>,
    window_end: Instant,
    hurry: &mut dyn FnMut() -> bool,
) -> bool {
    loop {
        let idle = match nudged {
            Some((session, before)) => {
                e.status.idles(session) > *before && !e.status.is_busy(session)
            }
            None => e.status.busy_sessions().is_empty(),
        };
        if idle || !e.runtime.is_running() {
            return idle;
        }
        if Instant::now() >= window_end || hurry() {
            (e.log)("the nudge window closed with a turn still running");
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `sh -c command` in the agent's working folder with its home environment, in a process
/// group of its own, killed when it outlives `limit`.
fn save(e: &Eviction<'_>, command: &str, limit: Duration) -> Value {
    let workdir = e.options.workdir();
    let home = e.options.home();
    let started = Instant::now();
    let spawned = Command::new("sh")
        .args(["-c", command])
        .current_dir(&workdir)
        .env("HOME", &home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => return json!({ "command": command, "error": error.to_string() }),
    };
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let log = std::sync::Arc::clone(e.log);
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                log(&format!("save: {line}"));
            }
        });
    }
    let deadline = started + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Ok(None) | Err(_) => break None,
        }
    };
    let timed_out = status.is_none();
    if timed_out {
        if let Some(group) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(group, Signal::KILL);
        }
        let _ = child.wait();
    }
    json!({
        "command": command,
        "workdir": workdir,
        "code": status.and_then(|s| s.code()),
        "signal": status.and_then(|s| s.signal()),
        "timed_out": timed_out,
        "took_ms": millis(started.elapsed()),
    })
}
