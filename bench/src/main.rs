//! `stasis-bench`: how fast stasis's agent event log is, each figure beside
//! a baseline measured in the same run.
//!
//! What it measures, all on 127.0.0.1:
//!
//! 1. appends of 100-event batches over 16 connections (to 16 agents, then
//!    to one), against native rusqlite inserts of the same rows;
//! 2. single-event append latency at concurrency 1 (`--durability fsync`
//!    against a bare `write` + `fdatasync`, then `--durability os`);
//! 3. catch-up reads of 10,000 events from cursor 0;
//! 4. Server-Sent Events append-to-delivery latency;
//! 5. host start to first served request, component cache warm;
//! 6. the same appends, reads and live delivery on the Durable Streams
//!    reference server (`bench/peer`), the peer stasis is compared with.
//!
//! stasis is "a base URL and a token": by default the bench spawns
//! `--stasis-bin serve` itself on a free loopback port with a random
//! `STASIS_SECRET`; `--url URL --token T` points it at a running server
//! instead (the edge's `wrangler dev`, say), and the workloads that need to
//! restart the server are then skipped.
//!
//! Every loop is bounded by a count and a time limit; a full run takes about
//! two minutes, `--quick` a few seconds per workload. The table goes to
//! stdout, progress to stderr; `--record BENCHMARKS.md` rewrites this
//! benchmark's section of that file (between
//! `<!-- bench:event-log:start -->` and `<!-- bench:event-log:end -->`) and
//! keeps the rest. `scripts/bench` installs, builds and runs it.

mod client;
mod logs;
mod machine;
mod native;
mod peer;
mod plan;
mod process;
mod report;
mod results;
mod rows;
mod server;
mod stats;
mod workloads;

use anyhow::{Result, bail};
use clap::Parser;
use std::{path::PathBuf, process::ExitCode};

/// Benchmarks stasis's event log against native baselines and the Durable
/// Streams peer, measured in the same run.
#[derive(Debug, Parser)]
#[command(name = "stasis-bench", version, args_override_self = true)]
struct Args {
    /// The `stasis` binary to spawn.
    #[arg(long, default_value = "target/release/stasis")]
    stasis_bin: PathBuf,
    /// Target an already running stasis at this base URL (loopback only)
    /// instead of spawning one.
    #[arg(long)]
    url: Option<String>,
    /// The bearer token for `--url` (an admin token).
    #[arg(long, env = "STASIS_TOKEN", requires = "url", hide_env_values = true)]
    token: Option<String>,
    /// Rewrite this benchmark's section of FILE (e.g. BENCHMARKS.md).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// A short smoke run: small counts and one-second limits.
    #[arg(long)]
    quick: bool,
    /// Skip the Durable Streams peer.
    #[arg(long)]
    no_peer: bool,
    /// The folder with the peer's `server.mjs` and `node_modules`.
    #[arg(long)]
    peer_dir: Option<PathBuf>,
    /// The Node.js binary that runs the peer.
    #[arg(long, default_value = "node")]
    node: PathBuf,
    /// Where the temp folders go (default: the system's temp folder).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("some workloads failed (see the table)");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("stasis-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the benchmark; `Ok(false)` when some workload failed.
fn run(args: Args) -> Result<bool> {
    let options = plan::Options {
        quick: args.quick,
        stasis_bin: args.stasis_bin.clone(),
        url: args.url.clone().map(|url| (url, args.token.clone())),
        peer: !args.no_peer,
        peer_dir: peer::resolve_dir(args.peer_dir.clone()),
        node: args.node.clone(),
        tmp_dir: args.tmp_dir.clone(),
    };
    if options.url.is_none() && !options.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`) or pass --url",
            options.stasis_bin.display()
        );
    }
    let load_before = machine::load_average();
    let results = plan::run(&options)?;
    let rows = rows::rows(&results);
    println!("{}", report::table(&rows));

    if let Some(path) = &args.record {
        let info = report::RunInfo {
            machine: machine::Machine::detect(),
            load: (load_before, machine::load_average()),
            command: command_line(),
            target: match &args.url {
                Some(url) => format!("stasis at {url} (given by `--url`)"),
                None => format!(
                    "`{} serve` spawned by the bench on 127.0.0.1",
                    args.stasis_bin.display()
                ),
            },
        };
        report::record(path, &report::section(&info, &rows))?;
        eprintln!("recorded in {}", path.display());
    }
    Ok(!rows.iter().any(report::Row::failed))
}

/// The command as typed, as markdown, with the wrapper script named when it set
/// `STASIS_BENCH_VIA` (and never a token).
fn command_line() -> String {
    let mut words: Vec<String> = Vec::new();
    let mut hide_next = false;
    for arg in std::env::args() {
        if hide_next {
            words.push("<token>".to_owned());
            hide_next = false;
        } else if arg == "--token" {
            hide_next = true;
            words.push(arg);
        } else if arg.starts_with("--token=") {
            words.push("--token=<token>".to_owned());
        } else {
            words.push(arg);
        }
    }
    let direct = words.join(" ");
    match std::env::var("STASIS_BENCH_VIA") {
        Ok(via) if !via.is_empty() => format!("`{via}` (runs `{direct}`)"),
        _ => format!("`{direct}`"),
    }
}
