//! The agent sidecar (`stasis-client sidecar`) as a container runs it: its own process beside a
//! runtime, feeding a real `stasis serve`. The runtime is a synthetic kilo ([`fake_kilo`]): the
//! real Kilo CLI needs a model, and the lead's real-agent test runs it.
//!
//! These tests guard the sidecar's promises: every event stored exactly once and in order when
//! stasis, the runtime's stream or the sidecar itself dies (a reused producer stamp would be
//! answered `duplicate: true` and silently lose events); what went missing read back from the
//! runtime's own API; a snapshot after each turn with the right watermark; a clean stop within
//! its budget; a clear refusal to start; a stop at once, with its own exit code, once another
//! container has taken the town over; and tokens kept alive past their lifetime.

mod fake_kilo;
mod forwarding;
mod harness;
mod lifecycle;
mod measure;
mod proxy;
mod recovery;
mod snapshots;
mod tokens;

use std::path::PathBuf;
use std::time::Duration;

use fake_kilo::FakeKilo;
use harness::{Setup, SidecarProcess, Stasis};

use crate::helpers::create_db;

/// Long enough for a debug build on a busy machine; the tests end as soon as they can.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// stasis, a synthetic kilo, the agent's kilo.db and the sidecar's state directory.
pub struct Rig {
    pub stasis: Stasis,
    pub kilo: FakeKilo,
    pub db: PathBuf,
    pub state_dir: PathBuf,
    /// The container's root (`--root`): agent homes and the token file.
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Rig {
    /// Everything up.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir
            .path()
            .join("agent-home-mayor/.local/share/kilo/kilo.db");
        create_db(&db, 50, "wal");
        let stasis = Stasis::start(&dir.path().join("stasis"));
        // As `boot` would have: the container holds the town before its sidecars write.
        let (status, _) = harness::heartbeat(&stasis.base, harness::CONTAINER);
        assert_eq!(status, 200, "the container's heartbeat");
        Rig {
            stasis,
            kilo: FakeKilo::start(),
            db,
            state_dir: dir.path().join("stasis-sidecar-mayor"),
            root: dir.path().to_owned(),
            _dir: dir,
        }
    }

    /// How the sidecar is started against this rig.
    pub fn setup(&self) -> Setup<'_> {
        Setup::new(
            &self.stasis.base,
            &self.kilo.base,
            &self.db,
            &self.state_dir,
        )
    }

    /// Starts the sidecar with `flags` and waits until it follows the runtime's stream.
    pub fn sidecar(&self, flags: &[&str]) -> SidecarProcess {
        let before = self.kilo.connections();
        let sidecar = SidecarProcess::spawn(&self.setup().with(flags));
        self.kilo.wait_connections(before + 1, PATIENCE);
        sidecar
    }

    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}` and `suffix`.
    pub fn agent_path(suffix: &str) -> String {
        format!(
            "/api/towns/{}/rigs/{}/agents/{}{suffix}",
            harness::TOWN,
            harness::RIG,
            harness::AGENT
        )
    }
}

/// The figures of [`measure::measure_forwarding`], printed (not asserted: speed is the bench's).
#[test]
#[ignore = "a measurement: run it in release with --ignored --nocapture"]
fn forwarding_rate_and_delay() {
    let rig = Rig::new();
    let sidecar = rig.sidecar(&[]);
    let figures = measure::measure_forwarding(
        &rig.stasis.base,
        &crate::support::admin(),
        &Rig::agent_path(""),
        &rig.kilo,
        100_000,
        5_000,
        1_000,
    );
    println!(
        "burst: {} events at {:.0} events/s; paced: {} events, delay median {:.2} ms, p99 {:.2} ms",
        figures.burst_events,
        figures.events_per_sec,
        figures.paced_events,
        figures.delay_median_ms,
        figures.delay_p99_ms
    );
    sidecar.signal("TERM");
    let exit = sidecar.wait_exit(PATIENCE);
    println!("{}", exit.summary);
}
