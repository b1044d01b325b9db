//! kilo on its own, with nothing of stasis around it: the baselines of the supervised figures.
//! A session with one turn, then kilo SIGKILLed and started again by hand on the same home,
//! timed from the spawn to the session's messages answered (what the supervised restart is
//! measured to), then once more from the spawn to a prompt (sent as soon as kilo is healthy)
//! reaching the model (what the continuation on the next container is measured to), with a
//! second kilo starting beside it on a home of its own, as the next container starts the
//! Mayor's and the polecat's at once.

use anyhow::{Context, Result};
use stasis_kilo_harness::supervision::log::poll;
use stasis_kilo_harness::{FakeModel, Kilo, KiloOptions, Reply, Script};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long any step may take on a busy machine.
const PATIENCE: Duration = Duration::from_secs(120);

/// kilo's own figures, from one round.
#[derive(Debug, Clone, Copy)]
pub struct BareKilo {
    /// Spawned after a SIGKILL → the session's messages answered.
    pub restart_to_served: Duration,
    /// Spawned after a SIGKILL, beside a second kilo starting → a prompt sent at once reached
    /// the model.
    pub start_to_model: Duration,
}

/// One round, with kilo's home under `dir`.
pub fn measure(dir: &Path) -> Result<BareKilo> {
    let model = FakeModel::start(Script::new().otherwise(Reply::text("Noted.")).title("Bare"))?;
    let options = KiloOptions::new(dir.join("home"), &model.base_url()).startup_timeout(PATIENCE);
    let kilo = Kilo::start(&options)?;
    let session = kilo.api().create_session()?;
    let events = kilo.events()?;
    kilo.api()
        .prompt_async(&session, "What is on today's plan?")?;
    events.wait_for_idle(&session, 0, PATIENCE)?;
    kilo.kill();

    let spawned = Instant::now();
    let kilo = Kilo::start(&options)?;
    // The supervision story's own poll, so that both figures are polled alike.
    poll(
        "the session served again",
        PATIENCE,
        || Ok(()),
        || {
            Ok(kilo
                .api()
                .messages(&session)
                .ok()
                .filter(|m| m.len() >= 2)
                .map(drop))
        },
    )?;
    let restart_to_served = spawned.elapsed();
    kilo.kill();

    // The second agent's home holds a session and a turn too, as the polecat's does.
    let second =
        KiloOptions::new(dir.join("home-beside"), &model.base_url()).startup_timeout(PATIENCE);
    let beside = Kilo::start(&second)?;
    let beside_session = beside.api().create_session()?;
    let beside_events = beside.events()?;
    beside
        .api()
        .prompt_async(&beside_session, "What is on today's plan?")?;
    beside_events.wait_for_idle(&beside_session, 0, PATIENCE)?;
    beside.kill();

    let before = model_turns(&model);
    let spawned = Instant::now();
    let beside = std::thread::spawn(move || Kilo::start(&second));
    let kilo = Kilo::start(&options)?;
    kilo.api().prompt_async(&session, "And after that?")?;
    poll(
        "the prompt at the model",
        PATIENCE,
        || Ok(()),
        || Ok((model_turns(&model) > before).then_some(())),
    )
    .context("kilo's own start to the model")?;
    let start_to_model = spawned.elapsed();
    kilo.kill();
    match beside.join() {
        Ok(started) => started?.kill(),
        Err(_) => anyhow::bail!("the kilo started beside panicked"),
    }
    model.stop();
    Ok(BareKilo {
        restart_to_served,
        start_to_model,
    })
}

/// The model's requests that are turns (not kilo's title requests).
fn model_turns(model: &FakeModel) -> usize {
    model
        .requests()
        .iter()
        .filter(|r| !r.is_title_request())
        .count()
}
