//! `stasis-bench soak`: a long run of a realistic mix against a host the
//! soak starts, watching the host's memory and descriptors.
//!
//! Each of `--clients` clients plays one agent's container (agents spread
//! over four towns): stamped appends (now and then retried, which must
//! append nothing), reads that follow a cursor, Server-Sent Events tails
//! that drop and reconnect where they stopped, checkpoints, memory,
//! snapshot pushes (inline and KV sizes), heartbeats and conversation
//! rebuilds, with a few milliseconds of think time between requests.
//! Every `--sample-secs` the host's RSS, open descriptors and threads are
//! read from `/proc`. The table (start, after warm-up, peak, end and idle
//! after, requests by kind, errors by status) goes to stdout, and with
//! `--record FILE` into its own section of BENCHMARKS.md
//! (`<!-- bench:soak:start -->` … `<!-- bench:soak:end -->`).

mod client;
mod report;
mod sample;
mod tally;

use crate::server::{HostConfig, HostDurability, StasisHost, random_hex};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use report::RECORD_MARKS;

/// `stasis-bench soak`.
#[derive(Debug, clap::Args)]
#[command(args_override_self = true)]
pub struct Args {
    /// The `stasis` binary to start.
    #[arg(long, default_value = "target/release/stasis")]
    stasis_bin: PathBuf,
    /// How long the clients run, in minutes.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// How many clients (each one agent's container).
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Seconds between samples of the host.
    #[arg(long, default_value_t = 5)]
    sample_secs: u64,
    /// Rewrite the soak's section of FILE (e.g. BENCHMARKS.md).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Where the temp folder goes.
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// The seed of the clients' choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The `stasis` binary.
    pub stasis_bin: PathBuf,
    /// How long the clients run.
    pub duration: Duration,
    /// How many clients.
    pub clients: usize,
    /// How often the host is sampled.
    pub sample_every: Duration,
    /// Where the temp folder goes.
    pub tmp_dir: Option<PathBuf>,
    /// Rewrite the soak's section of this file.
    pub record: Option<PathBuf>,
    /// The seed of the clients' choices.
    pub seed: u64,
    /// The command as typed, for the record (markdown).
    pub command: String,
}

/// Runs the soak `args` ask for; `command` is the command line as typed,
/// for the record. `Ok(false)` when requests failed.
pub fn run_with(args: &Args, command: String) -> Result<bool> {
    if !args.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`)",
            args.stasis_bin.display()
        );
    }
    if !(args.minutes > 0.0 && args.minutes <= 24.0 * 60.0) || args.clients == 0 {
        bail!("--minutes must be within (0, 1440] and --clients at least 1");
    }
    run(&Options {
        stasis_bin: args.stasis_bin.clone(),
        duration: Duration::from_secs_f64(args.minutes * 60.0),
        clients: args.clients,
        sample_every: Duration::from_secs(args.sample_secs.max(1)),
        tmp_dir: args.tmp_dir.clone(),
        record: args.record.clone(),
        seed: args.seed,
        command,
    })
}

/// Runs the soak; `Ok(false)` when requests failed.
pub fn run(options: &Options) -> Result<bool> {
    let tmp = match &options.tmp_dir {
        Some(dir) => tempfile::Builder::new()
            .prefix("stasis-soak-")
            .tempdir_in(dir)?,
        None => tempfile::Builder::new().prefix("stasis-soak-").tempdir()?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let load_before = crate::machine::load_average();
    let config = HostConfig {
        bin: options.stasis_bin.clone(),
        data_dir: tmp.path().join("data"),
        durability: HostDurability::Fsync,
        secret: random_hex(24)?,
        log: tmp.path().join("host.log"),
        extra_args: Vec::new(),
    };
    let outcome = runtime.block_on(soak(options, &config))?;
    let report = report::Report::new(options, outcome, load_before);
    println!("{}", report.table());
    if let Some(path) = &options.record {
        crate::report::record(path, RECORD_MARKS, &report.section())?;
        eprintln!("recorded in {}", path.display());
    }
    Ok(report.clean())
}

/// What a soak saw.
pub struct Outcome {
    /// The host's samples, in order.
    pub samples: Vec<sample::Sample>,
    /// The sample taken a few seconds after the clients stopped.
    pub idle_after: Option<sample::Sample>,
    /// Every client's counts, merged.
    pub tally: tally::Tally,
    /// How long the clients ran.
    pub elapsed: Duration,
}

async fn soak(options: &Options, config: &HostConfig) -> Result<Outcome> {
    let host = StasisHost::start(config).await?;
    let pid = host.pid().context("the host has no pid")?;
    let endpoint = Arc::clone(host.endpoint());
    eprintln!(
        "soak: {} clients for {:?} against {} (pid {pid})",
        options.clients,
        options.duration,
        endpoint.base_url()
    );
    let started = Instant::now();
    let deadline = started + options.duration;
    let sampler = tokio::spawn(sample::every(pid, options.sample_every, deadline));
    let clients: Vec<_> = (0..options.clients)
        .map(|index| {
            let endpoint = Arc::clone(&endpoint);
            let seed = options.seed.wrapping_add(index as u64);
            tokio::spawn(client::run(endpoint, index, seed, deadline))
        })
        .collect();
    let mut tally = tally::Tally::default();
    for client in clients {
        tally.merge(client.await.context("a soak client panicked")?);
    }
    let elapsed = started.elapsed();
    let samples = sampler.await.context("the sampler panicked")?;
    // Idle again: the descriptors of closed connections should be gone.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_after = sample::read(pid, started.elapsed());
    if let Err(error) = host.stop() {
        eprintln!("stopping the host: {error:#}");
    }
    Ok(Outcome {
        samples,
        idle_after,
        tally,
        elapsed,
    })
}
