//! Container A: kilo serve and the sidecar in one process group, a few turns through kilo's
//! own API, then SIGKILL to the whole group in the middle of a streamed reply.

use super::script::{MAYOR, RIG};
use super::stasis::RegistryEntry;
use super::{Stage, poll};
use crate::{EventStream, Kilo, KiloMessage, KiloOptions};
use anyhow::{Context, Result, bail};
use rustix::process::{Pid, Signal, kill_process};
use stasis_client::credentials::{TokenClaims, token_file};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long one turn may take (kilo's first one starts its machinery).
const TURN: Duration = Duration::from_secs(90);
/// How long the sidecar may take to follow kilo, and stasis to show what it forwarded.
const FORWARDING: Duration = Duration::from_secs(30);
/// Streamed pieces of the 4th reply stasis must hold before the kill.
pub const DELTAS_BEFORE_KILL: usize = 3;

/// Container A while it runs.
pub struct ContainerA {
    /// Its container id.
    pub id: String,
    /// Where the sidecar's output goes (outside the container's root, which B empties).
    log: PathBuf,
    /// The Mayor's kilo session.
    pub session: String,
    kilo: Option<Kilo>,
    sidecar: Option<Child>,
    events: EventStream,
}

/// What the kill interrupted.
#[derive(Debug, Clone)]
pub struct Cut {
    /// `message.part.delta` events kilo had sent of the 4th reply when the group died.
    pub deltas_sent: usize,
    /// Those stasis held when the kill was sent.
    pub deltas_stored: usize,
}

impl ContainerA {
    /// `stasis-client boot` with a bootstrap token (a container token taken, the heartbeat),
    /// the Mayor registered, kilo serve and the sidecar (with the container token boot took)
    /// started in one new process group, the session created and named in the container
    /// registry.
    pub fn boot(stage: &Stage<'_>, root: &Path, log: &Path) -> Result<Self> {
        let id = format!("c-a-{}", super::random_suffix());
        super::container_b::boot(stage, root, Some(&id))?;
        let token = container_token(stage, root, &id)?;
        stage.api.put_agent(&stage.town, RIG, MAYOR, "mayor")?;
        let home = root.join(format!("agent-home-{MAYOR}"));
        let kilo = Kilo::start(&stage.kilo_options(&home))?;
        let group = kilo.process_group().context("kilo's process group")?;
        let sidecar = Sidecar {
            container_id: &id,
            token: &token,
            root,
            log,
        };
        let sidecar = sidecar.spawn(stage, kilo.url(), group)?;
        let events = kilo.events()?;
        let mut container = Self {
            id,
            log: log.to_owned(),
            session: String::new(),
            kilo: Some(kilo),
            sidecar: Some(sidecar),
            events,
        };
        container.wait_sidecar_following(stage)?;
        container.session = container.kilo()?.api().create_session()?;
        let port = port_of(container.kilo()?.url())?;
        let entry = RegistryEntry {
            agent_id: MAYOR,
            rig_id: RIG,
            role: "mayor",
            session_id: &container.session,
            port,
        };
        stage
            .api
            .put_registry(&stage.town, &container.id, &[entry])?;
        Ok(container)
    }

    /// kilo's URL.
    pub fn kilo_url(&self) -> Result<String> {
        Ok(self.kilo()?.url().to_owned())
    }

    /// One turn through kilo's own API, to its end (`session.idle`).
    pub fn turn(&self, prompt: &str) -> Result<()> {
        let mark = self.events.len();
        self.kilo()?.api().prompt_async(&self.session, prompt)?;
        self.events
            .wait_for_idle(&self.session, mark, TURN)
            .with_context(|| format!("the turn {prompt:?} did not end"))?;
        Ok(())
    }

    /// kilo's own view of the session now.
    pub fn messages(&self) -> Result<Vec<KiloMessage>> {
        self.kilo()?.api().messages(&self.session)
    }

    /// Waits until stasis holds the `session.idle` of each of the `turns` turns held so far,
    /// then a snapshot whose watermark covers the last one (the sidecar pushes one when a turn
    /// ends). Answers (that idle's seq, the watermark).
    pub fn wait_snapshot_of_turn(&self, stage: &Stage<'_>, turns: usize) -> Result<(u64, u64)> {
        let what = format!("stasis to hold turn {turns}'s session.idle");
        let idle = poll(&what, FORWARDING, || {
            let events = stage.api.events_after(&stage.agent_path, 0)?;
            let session = Some(self.session.as_str());
            let ends = events
                .iter()
                .filter(|e| e.kind == "session.idle" && e.session_id.as_deref() == session);
            Ok(ends.map(|e| e.seq).nth(turns.saturating_sub(1)))
        })?;
        let watermark = poll(
            &format!("a snapshot whose watermark covers seq {idle} (turn {turns}'s end)"),
            FORWARDING,
            || {
                let mark = stage.api.snapshot_watermark(&stage.agent_path)?;
                Ok(mark.filter(|&mark| mark >= idle))
            },
        )?;
        Ok((idle, watermark))
    }

    /// Starts a turn whose reply streams slowly and, once stasis holds
    /// [`DELTAS_BEFORE_KILL`] of its pieces, SIGKILLs the whole process group: kilo and the
    /// sidecar die at once, nothing is drained.
    pub fn kill_mid_reply(&mut self, stage: &Stage<'_>, prompt: &str) -> Result<Cut> {
        let before = stage.api.events_after(&stage.agent_path, 0)?;
        let mark = before.last().map_or(0, |e| e.seq);
        let kilo_mark = self.events.len();
        self.kilo()?.api().prompt_async(&self.session, prompt)?;
        let deltas_stored = poll("stasis to hold the 4th reply's first pieces", TURN, || {
            let deltas = stage
                .api
                .events_after(&stage.agent_path, mark)?
                .into_iter()
                .filter(|e| e.kind == "message.part.delta")
                .count();
            Ok((deltas >= DELTAS_BEFORE_KILL).then_some(deltas))
        })?;
        if let Some(kilo) = self.kilo.take() {
            kilo.kill();
        }
        if let Some(mut sidecar) = self.sidecar.take() {
            // Already dead: it was in kilo's group.
            sidecar.wait().context("reaping the sidecar")?;
        }
        let deltas_sent = self.events.events()[kilo_mark..]
            .iter()
            .filter(|e| e.kind() == "message.part.delta")
            .count();
        Ok(Cut {
            deltas_sent,
            deltas_stored,
        })
    }

    /// Every event kilo's `/event` stream sent so far, as received (sync twins included).
    pub fn sent_events(&self) -> Vec<crate::KiloEvent> {
        self.events.events()
    }

    /// How many events kilo's `/event` stream sent so far.
    pub fn sent_count(&self) -> usize {
        self.events.len()
    }

    /// SIGTERM to the sidecar (it forwards what it holds and pushes a last snapshot), then
    /// kilo stopped. Answers the sidecar's JSON summary (its last stdout line).
    pub fn stop(mut self, within: Duration) -> Result<String> {
        let mut sidecar = self.sidecar.take().context("the sidecar is gone")?;
        let _ = kill_process(Pid::from_child(&sidecar), Signal::TERM);
        let deadline = std::time::Instant::now() + within;
        let status = loop {
            if let Some(status) = sidecar.try_wait()? {
                break status;
            }
            if std::time::Instant::now() >= deadline {
                let _ = sidecar.kill();
                bail!("the sidecar did not exit within {within:?} of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        if let Some(kilo) = self.kilo.take() {
            kilo.stop();
        }
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let summary = log.lines().rev().find(|l| l.starts_with('{')).unwrap_or("");
        if !status.success() {
            bail!("the sidecar exited {status} after SIGTERM:\n{log}");
        }
        Ok(summary.to_owned())
    }

    /// `error`, followed by the sidecar's output so far.
    pub fn with_sidecar_log(&self, error: &anyhow::Error) -> anyhow::Error {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        anyhow::anyhow!("{error:#}\nthe sidecar's output:\n{log}")
    }

    fn kilo(&self) -> Result<&Kilo> {
        self.kilo.as_ref().context("container A's kilo is gone")
    }

    /// The sidecar announces each start with a `stasis.sidecar.resync` event: once stasis holds
    /// it, the sidecar follows kilo's stream and nothing kilo does is missed.
    fn wait_sidecar_following(&mut self, stage: &Stage<'_>) -> Result<()> {
        let waited = poll(
            "the sidecar's start (stasis.sidecar.resync)",
            FORWARDING,
            || {
                if let Some(sidecar) = self.sidecar.as_mut()
                    && let Some(status) = sidecar.try_wait()?
                {
                    bail!("the sidecar exited ({status})");
                }
                let events = stage.api.events_after(&stage.agent_path, 0)?;
                Ok(events
                    .iter()
                    .any(|e| e.kind == "stasis.sidecar.resync")
                    .then_some(()))
            },
        );
        waited.map_err(|error| self.with_sidecar_log(&error))
    }
}

impl Drop for ContainerA {
    fn drop(&mut self) {
        // kilo's group holds the sidecar: killing it takes both.
        drop(self.kilo.take());
        if let Some(mut sidecar) = self.sidecar.take() {
            let _ = sidecar.kill();
            let _ = sidecar.wait();
        }
    }
}

/// The container token `boot` wrote for `container_id` (a token bound to it, as the sidecar
/// must be given).
fn container_token(stage: &Stage<'_>, root: &Path, container_id: &str) -> Result<String> {
    let file = token_file(root, container_id);
    let token = std::fs::read_to_string(&file)
        .with_context(|| format!("boot wrote no token file {}", file.display()))?;
    let token = token.trim().to_owned();
    let claims = TokenClaims::of(&token);
    if !claims
        .as_ref()
        .is_some_and(|c| c.binds(&stage.town, container_id))
    {
        bail!(
            "{} holds no container token of {container_id}: its claims are {claims:?}",
            file.display()
        );
    }
    Ok(token)
}

/// `stasis-client sidecar` of one container, with that container's token.
struct Sidecar<'p> {
    container_id: &'p str,
    token: &'p str,
    root: &'p Path,
    log: &'p Path,
}

impl Sidecar<'_> {
    /// Starts it beside kilo, in kilo's process group.
    fn spawn(&self, stage: &Stage<'_>, runtime_url: &str, group: u32) -> Result<Child> {
        let log = File::create(self.log).context("creating the sidecar's log")?;
        let group = i32::try_from(group).context("kilo's process group id")?;
        Command::new(stage.client_bin)
            .args([
                "sidecar",
                "--town",
                &stage.town,
                "--rig",
                RIG,
                "--agent",
                MAYOR,
            ])
            .args(["--container-id", self.container_id])
            .args(["--runtime-url", runtime_url])
            .arg("--root")
            .arg(self.root)
            .env("STASIS_URL", stage.api.base())
            .env("STASIS_TOKEN", self.token)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(group)
            .spawn()
            .with_context(|| format!("starting {} sidecar", stage.client_bin.display()))
    }
}

fn port_of(url: &str) -> Result<u16> {
    url.rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .with_context(|| format!("no port in kilo's URL {url}"))
}

/// kilo's options for a home under the stage's model.
impl Stage<'_> {
    pub(super) fn kilo_options(&self, home: &Path) -> KiloOptions {
        let options = KiloOptions::new(home, &self.model.base_url());
        match self.kilo_bin {
            Some(bin) => options.bin(bin),
            None => options,
        }
    }
}
