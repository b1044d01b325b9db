//! Recovery of a real kilo agent: container A (kilo serve and the sidecar) holds two turns
//! and stops; then, in each round, kilo's own start on an empty home, and container B's
//! `boot` (the library call `stasis-client boot` makes) on the emptied root followed by
//! `kilo serve` on the hydrated kilo.db, until it answers with the restored session.

use super::Stasis;
use crate::stats::Latency;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use stasis_client::boot::{BootOptions, boot, kilo_db_path};
use stasis_client::sidecar::{End, Sidecar, SidecarOptions};
use stasis_client::town::{self, RegisteredAgent};
use stasis_client::{AgentRef, Client, Config};
use stasis_kilo_harness::{FakeModel, Kilo, KiloOptions, Reply, Script};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a turn, or kilo's answer, may take.
const PATIENCE: Duration = Duration::from_secs(90);

/// The figures of the rounds.
#[derive(Debug, Clone, Copy)]
pub struct Recoveries {
    /// B's boot to kilo answering with the restored session.
    pub recovery: Latency,
    /// The boot alone.
    pub boot: Latency,
    /// kilo's own start on an empty home to its first `GET /session` answer.
    pub kilo_start: Latency,
}

/// Container A once, then `rounds` rounds of a bare kilo start and a recovery.
pub fn rounds(stasis: &Stasis, rounds: usize, dir: &Path) -> Result<Recoveries> {
    let model = FakeModel::start(
        Script::new()
            .when(
                "plan",
                Reply::text("First the release notes, then the build check."),
            )
            .when("after", Reply::text("Only the changelog.")),
    )?;
    let client = Client::new(Config::new(&stasis.url, Some(stasis.token.clone()))?);
    let town = format!("bench-kilo-{}", crate::server::random_hex(4)?);
    let root = dir.join("tmp");
    let session = container_a(&client, &town, &root, &model)?;
    let (mut recovery, mut boots, mut starts) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        starts.push(bare_start(&dir.join(format!("empty-{round}")), &model)?);
        std::fs::remove_dir_all(&root)?;
        std::fs::create_dir_all(&root)?;
        let (boot_took, total) = container_b(&client, &town, &root, &model, &session)?;
        boots.push(boot_took);
        recovery.push(total);
    }
    let summary = |samples: Vec<Duration>| Latency::of(samples).context("no rounds");
    Ok(Recoveries {
        recovery: summary(recovery)?,
        boot: summary(boots)?,
        kilo_start: summary(starts)?,
    })
}

/// Heartbeat, the Mayor registered, kilo and an in-process sidecar, two turns, then a clean
/// stop (the sidecar flushes and pushes its last snapshot). Answers the session.
fn container_a(client: &Client, town: &str, root: &Path, model: &FakeModel) -> Result<String> {
    let container = town::new_container_id();
    town::heartbeat(client, town, &container, None)?;
    let mayor = AgentRef::new(town, "hq", "mayor")?;
    let _: Value = client.put_json(&mayor.path(""), &json!({"role": "mayor"}), None)?;
    let home = root.join("agent-home-mayor");
    let kilo = Kilo::start(&KiloOptions::new(&home, &model.base_url()))?;
    let sidecar = Sidecar::new(
        sidecar_options(&mayor, &kilo, &container, root),
        Arc::new(|_: &str| {}),
    );
    let stop = sidecar.stop_handle();
    let running = {
        let client = client.clone();
        std::thread::spawn(move || sidecar.run(&client))
    };
    let events = kilo.events()?;
    let api = kilo.api();
    let session = api.create_session()?;
    let entry = RegisteredAgent {
        agent_id: "mayor".to_owned(),
        rig_id: "hq".to_owned(),
        role: "mayor".to_owned(),
        session_id: Some(session.clone()),
        port: None,
    };
    town::put_registry(client, town, &container, &[entry], None)?;
    for prompt in ["Let us plan the day", "And after that?"] {
        let mark = events.len();
        api.prompt_async(&session, prompt)?;
        events.wait_for_idle(&session, mark, PATIENCE)?;
    }
    stop.stop();
    let report = running
        .join()
        .map_err(|_| anyhow::anyhow!("the sidecar's thread panicked"))?;
    if !matches!(report.end, End::Stopped) {
        bail!(
            "container A's sidecar did not stop cleanly: {:?}",
            report.end
        );
    }
    kilo.stop();
    Ok(session)
}

fn sidecar_options(mayor: &AgentRef, kilo: &Kilo, container: &str, root: &Path) -> SidecarOptions {
    let mut options = SidecarOptions::new(
        mayor.clone(),
        kilo.url().to_owned(),
        kilo.db_path(),
        container.to_owned(),
        root.join("stasis-sidecar-mayor"),
    );
    options.token_file = Some(stasis_client::credentials::token_file(root, container));
    options
}

/// kilo serve on an empty home, to its first `GET /session` answer.
fn bare_start(home: &Path, model: &FakeModel) -> Result<Duration> {
    let started = Instant::now();
    let kilo = Kilo::start(&KiloOptions::new(home, &model.base_url()))?;
    kilo.api().sessions()?;
    let took = started.elapsed();
    kilo.stop();
    Ok(took)
}

/// `boot` on the empty `root`, then kilo on the hydrated home until it answers with
/// `session`'s messages. Answers (the boot, the whole).
fn container_b(
    client: &Client,
    town: &str,
    root: &Path,
    model: &FakeModel,
    session: &str,
) -> Result<(Duration, Duration)> {
    let started = Instant::now();
    let options = BootOptions {
        container_id: town::new_container_id(),
        root: root.to_owned(),
        progress: false,
        chunk_cache: None,
    };
    let report = boot(client, town, &options, &mut |_| {})?;
    let boot_took = started.elapsed();
    if !report.complete()
        || report.dispatches().is_empty()
        || !kilo_db_path(root, "mayor").is_file()
    {
        bail!("boot did not hydrate the Mayor and hand over its dispatch: {report:?}");
    }
    let kilo = Kilo::start(&KiloOptions::new(
        root.join("agent-home-mayor"),
        &model.base_url(),
    ))?;
    let api = kilo.api();
    let deadline = Instant::now() + PATIENCE;
    while api.messages(session).map_or(true, |m| m.is_empty()) {
        if Instant::now() >= deadline {
            bail!("kilo on the hydrated kilo.db never answered with session {session}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let total = started.elapsed();
    kilo.stop();
    Ok((boot_took, total))
}
