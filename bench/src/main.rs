//! `stasis-bench`: how fast stasis is (the event log, snapshots, recovery,
//! the edge, the sidecar), each figure beside a baseline measured in the same
//! run.
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
//!    reference server (`bench/peer`), the peer stasis is compared with;
//! 7. snapshot PUT then GET of 24 MiB, against the same bytes written,
//!    fsynced and read back natively (with and without the two sha256s the
//!    server must compute);
//! 8. the peak memory (`VmHWM`) of a fresh host during one 1 GiB PUT and
//!    its GET;
//! 9. `snapshot push` of a live ~25 MB SQLite database with `stasis-client`:
//!    whole (against a raw PUT of as many bytes) and by chunks after one
//!    turn's change (against the whole-file push), and `snapshot pull` of
//!    25 MB and 100 MB (against a native copy + fsync + sha256);
//! 10. the conversation rebuilt from 10,000 streamed message events, against
//!     a plain read of the same events;
//! 11. recovery: a new container's first heartbeat to its three agents'
//!     kilo.db verified on disk and the Mayor's dispatch in hand;
//! 12. with `--edge-url`, the same stasis workloads on the edge worker under
//!     `wrangler dev --local`, each right after the host's, with the CPU time
//!     of every process involved (a third table and section);
//! 13. the agent sidecar forwarding from a synthetic kilo, and the recovery of
//!     a real kilo agent, on the host and the edge (`real_agent`, a fourth
//!     table and section, `<!-- bench:real-agent:start -->`).
//!
//! stasis is "a base URL and a token": by default the bench spawns
//! `--stasis-bin serve` itself on a free loopback port with a random
//! `STASIS_SECRET`; `--url URL --token T` points it at a running server
//! instead (the edge's `wrangler dev`, say), and the workloads that need to
//! restart the server are then skipped.
//!
//! Every loop is bounded by a count and a time limit; a full run takes about
//! three minutes (four with the edge), `--quick` a few seconds per workload.
//! The tables go to stdout, progress to stderr; `--record BENCHMARKS.md`
//! rewrites this benchmark's sections of that file (1–6 between
//! `<!-- bench:event-log:start -->` and `<!-- bench:event-log:end -->`, 7–11
//! between `<!-- bench:snapshots:start -->` and `<!-- bench:snapshots:end -->`),
//! and the edge's (`<!-- bench:edge:start -->` … `<!-- bench:edge:end -->`)
//! when the edge ran, and keeps the rest. `scripts/bench` installs, builds
//! and runs it, `wrangler dev` included.
//!
//! `--many-agents N [--max-open-objects M]` runs something else instead:
//! one append to each of N agents on a spawned host, with its descriptors
//! and resident set sampled along the way (see [`many_agents`]).
//!
//! `stasis-bench soak` is a separate, long run: a realistic mix of requests
//! from many clients against a host it starts, sampling the host's memory
//! and descriptors ([`soak`]); `scripts/soak` builds and records it.

mod chunk_rows;
mod client;
mod cpu;
mod edge_report;
mod logs;
mod machine;
mod many_agents;
mod native;
mod peer;
mod plan;
mod process;
mod real_agent;
mod report;
mod results;
mod rows;
mod server;
mod soak;
mod stats;
mod workloads;

use anyhow::{Result, bail};
use clap::Parser;
use std::{path::PathBuf, process::ExitCode};

/// Benchmarks stasis's event log against native baselines and the Durable
/// Streams peer, measured in the same run.
#[derive(Debug, Parser)]
#[command(
    name = "stasis-bench",
    version,
    args_override_self = true,
    args_conflicts_with_subcommands = true
)]
struct Args {
    /// A run other than the benchmark.
    #[command(subcommand)]
    command: Option<Command>,
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
    /// Also run the stasis workloads on the edge worker served by
    /// `wrangler dev --local` at this base URL (loopback only).
    #[arg(long, value_name = "URL")]
    edge_url: Option<String>,
    /// The edge worker's `STASIS_SECRET`, to mint an admin token from.
    #[arg(
        long,
        env = "STASIS_EDGE_SECRET",
        hide_env_values = true,
        conflicts_with = "edge_token"
    )]
    edge_secret: Option<String>,
    /// An admin token for the edge (instead of `--edge-secret`).
    #[arg(long, env = "STASIS_EDGE_TOKEN", hide_env_values = true)]
    edge_token: Option<String>,
    /// The process group of `wrangler dev` (it runs under `setsid`), whose
    /// processes' CPU time each edge workload reports.
    #[arg(long, value_name = "PGID", requires = "edge_url")]
    edge_pgid: Option<u32>,
    /// Skip the edge even when `--edge-url` is given.
    #[arg(long)]
    no_edge: bool,
    /// Instead of the benchmark: touch this many agents once each on a
    /// spawned host and print its descriptors and resident set along the
    /// way (the open-object cap at work).
    #[arg(long, value_name = "N", conflicts_with_all = ["url", "record", "edge_url"])]
    many_agents: Option<u64>,
    /// The host's `--max-open-objects` for `--many-agents`.
    #[arg(long, value_name = "M", requires = "many_agents")]
    max_open_objects: Option<usize>,
    /// Run only the sidecar and real-agent workloads (and record only their
    /// section).
    #[arg(long)]
    only_real_agent: bool,
    /// Run only the snapshot workloads (snapshots, `snapshot push`, the
    /// delta push, pulls, the conversation rebuild, recovery and peak
    /// memory) on a spawned host or `--url`, and record only their section.
    #[arg(long, conflicts_with = "only_real_agent")]
    only_snapshots: bool,
}

/// Runs other than the benchmark.
#[derive(Debug, clap::Subcommand)]
enum Command {
    /// A long run of a realistic mix against a host it starts, sampling
    /// the host's memory and open descriptors.
    Soak(soak::Args),
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = match &args.command {
        Some(Command::Soak(args)) => soak::run_with(args, command_line()),
        None => run(args),
    };
    match outcome {
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
    if let Some(agents) = args.many_agents {
        many_agents::run(&many_agents::ManyAgents {
            bin: args.stasis_bin.clone(),
            agents,
            max_open_objects: args.max_open_objects,
            tmp_dir: args.tmp_dir.clone(),
        })?;
        return Ok(true);
    }
    let options = plan::Options {
        quick: args.quick,
        stasis_bin: args.stasis_bin.clone(),
        url: args.url.clone().map(|url| (url, args.token.clone())),
        peer: !args.no_peer && !args.only_snapshots,
        peer_dir: peer::resolve_dir(args.peer_dir.clone()),
        node: args.node.clone(),
        tmp_dir: args.tmp_dir.clone(),
        edge: edge_target(&args)?,
        only_snapshots: args.only_snapshots,
    };
    if options.url.is_none() && !options.stasis_bin.is_file() {
        bail!(
            "{} does not exist: build it (`cargo build --release -p stasis-host`) or pass --url",
            options.stasis_bin.display()
        );
    }
    let load_before = machine::load_average();
    if args.only_real_agent {
        let rows = real_agent_rows(&args, &options)?;
        if let Some(path) = &args.record {
            let edge = options.edge.as_ref().map(|edge| edge.url.as_str());
            let section = real_agent::section(&run_info(&args, load_before), &rows, edge);
            report::record(path, real_agent::MARKS, &section)?;
        }
        return Ok(!rows.iter().any(report::Row::failed));
    }
    if args.only_snapshots {
        return snapshot_run(&args, &options, load_before);
    }
    let results = plan::run(&options)?;
    let rows = rows::rows(&results);
    println!("{}", report::table(&rows));
    let snapshot_rows = rows::snapshot_rows(&results);
    println!("{}", report::table(&snapshot_rows));
    let edge_rows = options.edge.as_ref().map(|_| edge_report::rows(&results));
    if let Some(edge_rows) = &edge_rows {
        println!("{}", edge_report::table(edge_rows));
        println!("{}", edge_report::explanations(edge_rows));
    }
    let agent_rows = real_agent_rows(&args, &options)?;

    if let Some(path) = &args.record {
        let info = run_info(&args, load_before);
        report::record(path, report::EVENT_LOG, &report::section(&info, &rows))?;
        report::record(
            path,
            report::SNAPSHOTS,
            &report::snapshots_section(&info, &snapshot_rows),
        )?;
        if let (Some(edge_rows), Some(edge)) = (&edge_rows, &options.edge) {
            let edge_info = edge_report::EdgeInfo {
                host: match &args.url {
                    Some(url) => format!("stasis at {url} (given by `--url`)"),
                    None => format!(
                        "`{} serve --durability fsync` (`--durability os` for its one row), \
                         spawned by the bench on 127.0.0.1",
                        args.stasis_bin.display()
                    ),
                },
                edge: format!(
                    "`wrangler dev --local` at {}{}",
                    edge.url,
                    edge.pgid.map(cpu::describe_group).unwrap_or_default()
                ),
            };
            report::record(
                path,
                edge_report::EDGE,
                &edge_report::section(&info, &edge_info, edge_rows),
            )?;
        }
        report::record(
            path,
            real_agent::MARKS,
            &real_agent::section(
                &info,
                &agent_rows,
                options.edge.as_ref().map(|edge| edge.url.as_str()),
            ),
        )?;
        eprintln!("recorded in {}", path.display());
    }
    let edge_failed = edge_rows.iter().flatten().any(edge_report::EdgeRow::failed);
    let failed = (rows.iter().chain(&snapshot_rows).chain(&agent_rows)).any(report::Row::failed);
    Ok(!failed && !edge_failed)
}

/// `--only-snapshots`: the snapshot workloads alone, printed and recorded
/// into their section only.
fn snapshot_run(args: &Args, options: &plan::Options, load_before: String) -> Result<bool> {
    let results = plan::run(options)?;
    let rows = rows::snapshot_rows(&results);
    println!("{}", report::table(&rows));
    if let Some(path) = &args.record {
        let info = run_info(args, load_before);
        report::record(
            path,
            report::SNAPSHOTS,
            &report::snapshots_section(&info, &rows),
        )?;
        eprintln!("recorded in {}", path.display());
    }
    Ok(!rows.iter().any(report::Row::failed))
}

/// The sidecar and real-agent rows (`real_agent`), printed.
fn real_agent_rows(args: &Args, options: &plan::Options) -> Result<Vec<report::Row>> {
    let rows = real_agent::run(&real_agent::Options {
        quick: args.quick,
        stasis_bin: args.stasis_bin.clone(),
        url: (args.url.clone()).map(|url| (url, args.token.clone().unwrap_or_default())),
        edge: (options.edge.as_ref()).map(|edge| (edge.url.clone(), edge.token.clone())),
        tmp_dir: args.tmp_dir.clone(),
    })?;
    println!("{}", report::table(&rows));
    Ok(rows)
}

/// What every recorded section says about the run.
fn run_info(args: &Args, load_before: String) -> report::RunInfo {
    report::RunInfo {
        machine: machine::Machine::detect(),
        load: (load_before, machine::load_average()),
        load_before_build: std::env::var("STASIS_BENCH_LOAD_BEFORE_BUILD")
            .ok()
            .filter(|load| !load.trim().is_empty()),
        command: command_line(),
        target: match &args.url {
            Some(url) => format!("stasis at {url} (given by `--url`)"),
            None => format!(
                "`{} serve` spawned by the bench on 127.0.0.1",
                args.stasis_bin.display()
            ),
        },
    }
}

/// The edge to run, from `--edge-url` and its secret or token.
fn edge_target(args: &Args) -> Result<Option<plan::EdgeTarget>> {
    let Some(url) = args.edge_url.clone().filter(|_| !args.no_edge) else {
        return Ok(None);
    };
    let token = match (&args.edge_secret, &args.edge_token) {
        (Some(secret), _) => {
            if secret.trim().len() < 16 {
                bail!("--edge-secret must be at least 16 characters, as the worker requires");
            }
            server::admin_token(secret.trim())?
        }
        (None, Some(token)) => token.clone(),
        (None, None) => bail!("--edge-url needs --edge-secret or --edge-token"),
    };
    Ok(Some(plan::EdgeTarget {
        url,
        token,
        pgid: args.edge_pgid,
    }))
}

/// The command as typed, as markdown, with the wrapper script named when it set
/// `STASIS_BENCH_VIA` (and never a token or secret).
fn command_line() -> String {
    const SECRETS: [&str; 3] = ["--token", "--edge-token", "--edge-secret"];
    let mut words: Vec<String> = Vec::new();
    let mut hide_next = false;
    for arg in std::env::args() {
        if hide_next {
            words.push("<hidden>".to_owned());
            hide_next = false;
        } else if SECRETS.contains(&arg.as_str()) {
            hide_next = true;
            words.push(arg);
        } else if let Some((flag, _)) = arg.split_once('=')
            && SECRETS.contains(&flag)
        {
            words.push(format!("{flag}=<hidden>"));
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
