//! What the acts wait for: a runtime's start as its supervisor recorded it, a process gone, a
//! container still alive; and the containers' folder emptied between them.

use super::Stage;
use super::container::Entrypoint;
use super::log::{number, poll};
use anyhow::{Result, bail};
use rustix::process::{Pid, test_kill_process};
use std::time::{Duration, Instant};

/// How long a start may take on a busy machine.
const WITHIN: Duration = Duration::from_secs(150);

/// A runtime start its supervisor recorded.
pub(super) struct Started {
    pub(super) pid: i32,
    pub(super) url: String,
    pub(super) ready: Duration,
    /// Its spawn on the wall clock (epoch ms), as its supervisor logged it.
    pub(super) spawned_at_ms: Option<u64>,
}

/// The containers' `/tmp`, emptied: the next container starts on an empty folder.
pub(super) fn empty_root(stage: &Stage<'_>) -> Result<()> {
    std::fs::remove_dir_all(&stage.root)?;
    std::fs::create_dir_all(&stage.root)?;
    Ok(())
}

/// Waits for a `stasis.runtime.started` after `after` whose sidecar follows (its resync event
/// came after it): the last such start. A start that failed meanwhile (a busy machine) is
/// retried by the supervisor; any attempt that made it counts.
pub(super) fn wait_started(
    stage: &Stage<'_>,
    container: &mut Entrypoint,
    agent: &str,
    after: u64,
) -> Result<Started> {
    wait_start(stage, container, agent, after, true)
}

/// Waits for a `stasis.runtime.started` after `after`, its sidecar started or not: the runtime
/// listens.
pub(super) fn wait_listening(
    stage: &Stage<'_>,
    container: &mut Entrypoint,
    agent: &str,
    after: u64,
) -> Result<Started> {
    wait_start(stage, container, agent, after, false)
}

fn wait_start(
    stage: &Stage<'_>,
    container: &mut Entrypoint,
    agent: &str,
    after: u64,
    followed: bool,
) -> Result<Started> {
    let path = stage.agent_path(agent);
    let what = format!("{agent}'s runtime started after seq {after}, followed by its sidecar");
    poll(
        &what,
        WITHIN,
        || alive(container),
        || {
            let events = stage.api.events_after(&path, after)?;
            let Some(index) = events
                .iter()
                .rposition(|e| e.kind == "stasis.runtime.started")
            else {
                return Ok(None);
            };
            let following = !followed
                || events[index..]
                    .iter()
                    .any(|e| e.kind == "stasis.sidecar.resync");
            let started = &events[index];
            let pid = number(started, "/pid").and_then(|p| i32::try_from(p).ok());
            let url = started.text_at("/url");
            Ok(match (following, pid, url) {
                (true, Some(pid), Some(url)) => Some(Started {
                    pid,
                    url,
                    ready: Duration::from_millis(number(started, "/ready_ms").unwrap_or(0)),
                    spawned_at_ms: number(started, "/spawned_at_ms"),
                }),
                _ => None,
            })
        },
    )
}

/// Whether `pid` is gone within 15 s (a SIGKILLed kilo takes a moment to be torn down and
/// reaped on a busy machine).
pub(super) fn gone_soon(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let gone = Pid::from_raw(pid).is_none_or(|pid| test_kill_process(pid).is_err());
        if gone || Instant::now() >= deadline {
            return gone;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub(super) fn alive(container: &mut Entrypoint) -> Result<()> {
    match container.try_exit()? {
        Some(status) => bail!("the container exited ({status})"),
        None => Ok(()),
    }
}
