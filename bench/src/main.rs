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
//!     table and section, `<!-- bench:real-agent:start -->`);
//! 14. with `--only-workspaces` (and only then), workspace saves and restores
//!     against `tar`, and the host's peak memory during a 2 GiB workspace push
//!     and pull ([`workspaces`], `<!-- bench:workspaces:start -->`);
//! 15. with `--only-history` (and only then), issue 25's history, restore
//!     and fork figures on a spawned release host and, with `--edge-url`, on
//!     the edge too: the bytes stored for 100 turn-versions of a 25 MB
//!     kilo.db against one version, a fork of an agent with 10,000 events and
//!     a 100 MB kilo.db (time against a checkpoint PUT, chunk bytes copied),
//!     and a restore in place and its undo ([`history`],
//!     `<!-- bench:history:start -->`; `--quick` shrinks every size).
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
mod history;
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
mod runs;
mod server;
mod soak;
mod stats;
mod workloads;
mod workspaces;

use clap::Parser;
use std::{path::PathBuf, process::ExitCode};

/// Benchmarks stasis (the event log, snapshots, recovery, the edge worker and
/// the sidecar) against native baselines and the Durable Streams peer, each
/// measured in the same run.
#[derive(Debug, Parser)]
#[command(
    name = "stasis-bench",
    version,
    args_override_self = true,
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Args {
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
    /// Run only the workspace workload (saves and restores against `tar`, the host's peak
    /// memory) on a spawned host, and record only its section.
    #[arg(long, conflicts_with_all = ["only_real_agent", "only_snapshots", "url"])]
    only_workspaces: bool,
    /// Run only the history, restore and fork workloads on a spawned host (and
    /// on `--edge-url` when given), and record only their section.
    #[arg(long, conflicts_with_all = ["only_real_agent", "only_snapshots", "only_workspaces", "url"])]
    only_history: bool,
    /// The repository whose tracked files make the workspace workload's real tree.
    #[arg(long, default_value = ".")]
    workspace_repo: PathBuf,
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
        Some(Command::Soak(args)) => soak::run_with(args, runs::command_line()),
        None => runs::run(args),
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
