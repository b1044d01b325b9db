//! Container B on an empty folder: `stasis-client boot`, then `kilo serve` on the hydrated
//! kilo.db, then a new prompt in the restored session.

use super::script::MAYOR;
use super::stasis::Dispatch;
use super::{Stage, poll};
use crate::{EventStream, Kilo, KiloMessage, ModelRequest};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the new turn may take.
const TURN: Duration = Duration::from_secs(90);

/// What `boot` did.
#[derive(Debug, Clone)]
pub struct Booted {
    /// The container id boot picked (it prints it on stderr).
    pub container_id: String,
    /// The dispatches it printed.
    pub dispatches: Vec<Dispatch>,
    /// Its stderr: one line per agent and dispatch.
    pub report: String,
    /// From its start to its exit.
    pub took: Duration,
}

impl Booted {
    /// The Mayor's dispatch.
    pub fn mayor(&self) -> Result<&Dispatch> {
        self.dispatches
            .iter()
            .find(|d| d.agent_id == MAYOR)
            .with_context(|| {
                format!(
                    "boot handed over no dispatch for the Mayor; it printed {} dispatch(es) and \
                     reported:\n{}",
                    self.dispatches.len(),
                    self.report
                )
            })
    }
}

/// `stasis-client boot --town T --root <root>` with a fresh bootstrap token: take a container token
/// (written to `<root>/stasis-token-<id>`), heartbeat as a new container (`container_id`, or
/// one boot picks), hydrate every agent of the registry, print the dispatches.
pub fn boot(stage: &Stage<'_>, root: &Path, container_id: Option<&str>) -> Result<Booted> {
    let started = Instant::now();
    let mut command = Command::new(stage.client_bin);
    command
        .args(["boot", "--town", &stage.town, "--root"])
        .arg(root);
    if let Some(id) = container_id {
        command.args(["--container-id", id]);
    }
    let output = command
        .env("STASIS_URL", stage.api.base())
        .env("STASIS_TOKEN", stage.bootstrap_token()?)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {} boot", stage.client_bin.display()))?;
    let took = started.elapsed();
    let report = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("stasis-client boot failed ({}):\n{report}", output.status);
    }
    let dispatches = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "boot's stdout is not a JSON array of dispatches: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })?;
    let container_id = report
        .lines()
        .find_map(|line| line.strip_prefix("container_id: "))
        .context("boot printed no container id")?
        .to_owned();
    Ok(Booted {
        container_id,
        dispatches,
        report,
        took,
    })
}

/// kilo serve started on the hydrated home, and when it first answered with the session.
pub struct Restored {
    /// The running kilo.
    pub kilo: Kilo,
    /// From the start of `kilo serve` to its health check answering.
    pub started_in: Duration,
    /// kilo's messages of the session then.
    pub messages: Vec<KiloMessage>,
}

/// Starts kilo on `home` (hydrated by boot) and waits until it answers with `session`'s
/// messages.
pub fn start_kilo(stage: &Stage<'_>, home: &Path, session: &str) -> Result<Restored> {
    let db = home.join(".local/share/kilo/kilo.db");
    if !db.is_file() {
        bail!("boot hydrated no kilo.db at {}", db.display());
    }
    let started = Instant::now();
    let kilo = Kilo::start(&stage.kilo_options(home))?;
    let started_in = started.elapsed();
    let api = kilo.api();
    let messages = poll("kilo to answer with the restored session", TURN, || {
        let listed = api.sessions()?.iter().any(|s| s.id == session);
        if !listed {
            let ids: Vec<String> = api.sessions()?.into_iter().map(|s| s.id).collect();
            bail!("kilo on the hydrated kilo.db does not list session {session}; it lists {ids:?}");
        }
        let messages = api.messages(session)?;
        Ok((!messages.is_empty()).then_some(messages))
    })?;
    Ok(Restored {
        kilo,
        started_in,
        messages,
    })
}

/// A new prompt in the restored session, to its end: answers the chat requests kilo sent the
/// model for it (title requests left out).
pub fn new_turn(
    stage: &Stage<'_>,
    kilo: &Kilo,
    session: &str,
    prompt: &str,
) -> Result<Vec<ModelRequest>> {
    let events: EventStream = kilo.events()?;
    let before = stage.model.requests().len();
    let mark = events.len();
    kilo.api().prompt_async(session, prompt)?;
    events
        .wait_for_idle(session, mark, TURN)
        .with_context(|| format!("the new turn {prompt:?} in the restored session did not end"))?;
    Ok(stage.model.requests()[before..]
        .iter()
        .filter(|r| !r.is_title_request())
        .cloned()
        .collect())
}
