//! The sidecar, in this process, following a synthetic kilo into one agent of `stasis`.

use super::fake_kilo::FakeKilo;
use super::measure::measure_forwarding;
use super::{Sizes, Stasis};
use crate::stats::{Latency, Rate};
use anyhow::{Context, Result, bail};
use stasis_client::sidecar::{End, Sidecar, SidecarOptions};
use stasis_client::{AgentRef, Client, Config};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What forwarding through the sidecar reached.
#[derive(Debug, Clone, Copy)]
pub struct Forwarded {
    /// The burst, from its first event emitted to its last readable.
    pub rate: Rate,
    /// Emission to readable, over the paced events.
    pub delay: Latency,
}

/// The container the sidecar runs in.
const CONTAINER: &str = "c-bench";

/// Starts a synthetic kilo and a sidecar following it into a fresh agent, then measures.
pub fn through_sidecar(stasis: &Stasis, sizes: &Sizes, dir: &Path) -> Result<Forwarded> {
    std::fs::create_dir_all(dir)?;
    let db = dir.join("kilo.db");
    rusqlite::Connection::open(&db)?.execute_batch("CREATE TABLE IF NOT EXISTS t (x)")?;
    let kilo = FakeKilo::start();
    let town = format!("bench-sidecar-{}", crate::server::random_hex(4)?);
    let agent = AgentRef::new(&town, "r", "mayor")?;
    let client = Client::new(Config::new(&stasis.url, Some(stasis.token.clone()))?);
    // As `boot` would have: the container holds the town before its sidecar writes (the
    // sidecar takes a container token, whose writes wait for its container's heartbeat).
    stasis_client::town::heartbeat(&client, &town, CONTAINER, None)?;
    let mut options = SidecarOptions::new(
        agent.clone(),
        kilo.base.clone(),
        db,
        CONTAINER.to_owned(),
        dir.join("state"),
    );
    options.token_file = Some(stasis_client::credentials::token_file(dir, CONTAINER));
    let sidecar = Sidecar::new(options, Arc::new(|_: &str| {}));
    let stop = sidecar.stop_handle();
    let running = std::thread::spawn(move || sidecar.run(&client));
    kilo.wait_connections(1, Duration::from_secs(60));
    let figures = measure_forwarding(
        &stasis.url,
        &format!("Bearer {}", stasis.token),
        &agent.path(""),
        &kilo,
        sizes.burst,
        sizes.paced,
        sizes.rate,
    );
    stop.stop();
    let report = running
        .join()
        .map_err(|_| anyhow::anyhow!("the sidecar's thread panicked"))?;
    if let End::Failed(error) = report.end {
        bail!("the sidecar failed: {error}");
    }
    let elapsed = Duration::from_secs_f64(figures.burst_events as f64 / figures.events_per_sec);
    let ms = |value: f64| Duration::from_secs_f64(value / 1000.0);
    Ok(Forwarded {
        rate: Rate {
            items: figures.burst_events,
            elapsed,
        },
        delay: Latency {
            median: ms(figures.delay_median_ms),
            p99: ms(figures.delay_p99_ms),
            samples: usize::try_from(figures.paced_events).context("paced events")?,
        },
    })
}
