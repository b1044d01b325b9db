//! `stasis-demo`: the eviction-and-recovery scenario stasis exists for, run and explained.
//!
//! A town's container A boots, its Mayor chats and saves its state, A is
//! evicted and flushes, the user writes during the gap, and container B
//! boots and gets everything back: the registry, the Mayor's dispatch with
//! its checkpoint and conversation (the gap message included), and every
//! kilo.db byte-identical. Each step prints what it did with its figures,
//! and every result the contract promises is checked; the first mismatch
//! ends the run with a non-zero exit.
//!
//! The data is synthetic and deterministic ([`kilo_db`], [`chat`]). By
//! default the server is a fresh host inside this process ([`target`]);
//! `--url` points the demo at any running stasis, the edge included.

mod chat;
mod http;
mod kilo_db;
mod report;
mod rng;
mod steps;
mod target;

use anyhow::Context;
use clap::Args;
use report::{Report, bytes, ms};
use std::time::{SystemTime, UNIX_EPOCH};
use target::Target;

/// `stasis-demo`'s flags.
#[derive(Args)]
pub struct DemoArgs {
    /// Run against this server (e.g. http://127.0.0.1:8787) instead of a
    /// fresh host started inside this process.
    #[arg(long)]
    url: Option<String>,
    /// Bearer token for --url (a town or admin token).
    #[arg(long, env = "STASIS_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The town to play in; it should be new [default: demo-<time>].
    #[arg(long)]
    town: Option<String>,
    /// Keep the temporary folder (both containers' files, the host's data)
    /// and print where it is.
    #[arg(long)]
    keep: bool,
    /// Where the in-process host keeps its compiled components, as `stasis
    /// serve --cache-dir` [default: in the temporary folder].
    #[arg(long, env = "STASIS_CACHE_DIR")]
    cache_dir: Option<std::path::PathBuf>,
    /// Print only the step headings and the summary.
    #[arg(long, short)]
    quiet: bool,
    /// The Mayor's kilo.db size in MB (tests use a small one).
    #[arg(long, hide = true, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=24))]
    mayor_db_mb: u64,
}

/// Runs the demo; an error means a step failed (already printed).
pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let town = match args.town {
        Some(town) => town,
        None => format!("demo-{}", unix_millis()),
    };
    stasis_domain::ids::check_id("town id", &town)?;
    let temp = tempfile::Builder::new()
        .prefix("stasis-demo-")
        .tempdir()
        .context("creating a temporary folder")?;
    let root = temp.path().to_path_buf();
    let target = match &args.url {
        Some(url) => Target::remote(url, args.token)?,
        None => Target::in_process(
            root.join("host-data"),
            args.cache_dir,
            (!args.keep).then(|| root.clone()),
        )?,
    };
    println!("stasis-demo: a town's container is replaced, and nothing is lost");
    println!("   town   {town}");
    println!("   server {}", target.description);
    let settings = steps::Settings {
        town,
        mayor_db_bytes: args.mayor_db_mb * 1_000_000,
        root: root.clone(),
    };
    let mut demo = steps::Demo::new(
        Report::new(args.quiet),
        settings,
        &target.base_url,
        target.token.clone(),
    )?;
    let outcome = demo.run();
    drop(target);
    let result = summarize(demo.report(), outcome, started);
    if args.keep {
        let kept = temp.keep();
        println!("   files kept in {}", kept.display());
    }
    println!("{REAL_AGENT_DEMO}");
    result
}

/// Prints how the run ended: the summary of a pass, or where it failed and why.
fn summarize(
    report: &Report,
    outcome: anyhow::Result<steps::Outcome>,
    started: std::time::Instant,
) -> anyhow::Result<()> {
    match outcome {
        Ok(outcome) => {
            println!("\nSummary");
            println!("   ✓ all {} checks passed", report.checks());
            println!(
                "   total {}; recovery {} (B's first heartbeat → {} kilo.dbs, {}, hydrated + the Mayor's dispatch in hand)",
                ms(started.elapsed()),
                ms(outcome.recovery),
                outcome.hydrated_agents,
                bytes(outcome.hydrated_bytes)
            );
            Ok(())
        }
        Err(err) => {
            println!("\n✗ FAILED in {}: {}", report.current_step(), explain(&err));
            println!(
                "   ({} checks had passed, {} in)",
                report.checks(),
                ms(report.elapsed())
            );
            Err(anyhow::anyhow!(
                "the demo failed in {}",
                report.current_step()
            ))
        }
    }
}

/// The real Kilo CLI cannot run here without being installed: the last line says how to see
/// the same story with it.
const REAL_AGENT_DEMO: &str = "\nWith the real Kilo CLI, SIGKILLed mid-reply (README, Container flow): \
    source scripts/setup.sh && stasis_kilo && cargo build -p stasis-host -p stasis-client \
    -p stasis-kilo-harness && target/debug/real-agent-demo";

/// The error and its causes, each said once (the client's errors already
/// quote their sources).
fn explain(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&cause);
        }
    }
    text
}

fn unix_millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}
