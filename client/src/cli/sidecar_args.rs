//! The `sidecar` command's arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::parse_budget;

#[derive(Debug, Args)]
pub struct SidecarArgs {
    /// Town id.
    #[arg(long, env = "STASIS_TOWN")]
    pub town: String,
    /// Rig id.
    #[arg(long, env = "STASIS_RIG")]
    pub rig: String,
    /// Agent id.
    #[arg(long, env = "STASIS_AGENT")]
    pub agent: String,
    /// Base URL of the agent's runtime (kilo serve), e.g. http://127.0.0.1:4096.
    #[arg(long, env = "STASIS_RUNTIME_URL")]
    pub runtime_url: String,
    /// This container's id, as given to or printed by `boot`.
    #[arg(long, env = "STASIS_CONTAINER_ID")]
    pub container_id: String,
    /// Directory holding the agent homes (where --db and --state-dir default to).
    #[arg(long, env = "STASIS_ROOT", default_value = "/tmp")]
    pub root: PathBuf,
    /// The agent's kilo.db [default: {root}/agent-home-{agent}/.local/share/kilo/kilo.db].
    #[arg(long, env = "STASIS_KILO_DB")]
    pub db: Option<PathBuf>,
    /// Where the stamp state and snapshot copies live; keep it for the container's life
    /// [default: {root}/stasis-sidecar-{agent}].
    #[arg(long, env = "STASIS_SIDECAR_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// How long a batch waits for more events after its first.
    #[arg(long, default_value = "25ms", value_parser = parse_budget)]
    pub linger: Duration,
    /// How often kilo.db and its -wal are checked, and pushed when they changed (a turn's
    /// end pushes at once).
    #[arg(long, default_value = "5s", value_parser = parse_budget)]
    pub snapshot_interval: Duration,
    /// Time from SIGTERM/SIGINT to exit: flush the events, push a last snapshot. Keep it below
    /// the container's grace period.
    #[arg(long, default_value = "30s", value_parser = parse_budget)]
    pub shutdown_budget: Duration,
    /// Events held while stasis is unreachable; more are dropped (then a gap event and a
    /// resync).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub buffer_events: u64,
    /// Bytes of events held while stasis is unreachable, e.g. 64MiB.
    #[arg(long, default_value = "64MiB", value_parser = parse_size)]
    pub buffer_bytes: u64,
    /// How long the runtime may take to answer GET /global/health (and kilo.db to appear).
    #[arg(long, default_value = "30s", value_parser = parse_budget)]
    pub start_timeout: Duration,
    /// The runtime's event stream is dead (and reopened) after this long without a byte;
    /// kilo sends a heartbeat about every 10 s.
    #[arg(long, default_value = "30s", value_parser = parse_budget)]
    pub idle_timeout: Duration,
}

fn parse_size(text: &str) -> Result<u64, String> {
    stasis_client::config::parse_size(text).map_err(|e| e.to_string())
}
