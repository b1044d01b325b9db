//! `stasis-kill-campaign`: hundreds of SIGKILL trials against a real
//! `stasis serve`, then the totals (see the library's docs for what a trial
//! checks). Exits non-zero when anything acknowledged was lost.
//!
//! ```text
//! cargo build --release -p stasis-host -p stasis-kill-campaign
//! target/release/stasis-kill-campaign --trials 300 --time-limit-secs 1800
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use stasis_kill_campaign::Campaign;

/// Kills a real `stasis serve` with SIGKILL under load, trial after trial,
/// and checks after each restart that nothing acknowledged was lost.
#[derive(Debug, Parser)]
#[command(name = "stasis-kill-campaign", version)]
struct Args {
    /// The `stasis` binary to start.
    #[arg(long, default_value = "target/release/stasis")]
    stasis_bin: PathBuf,
    /// Trials to run.
    #[arg(long, default_value_t = 300)]
    trials: u32,
    /// No trial starts after this many seconds.
    #[arg(long, default_value_t = 1_800)]
    time_limit_secs: u64,
    /// The seed of kill moments, batch sizes and snapshot bodies.
    #[arg(long, default_value_t = 2_026)]
    seed: u64,
    /// Where the host's data folder and log go (default: a new folder in
    /// the system's temp folder, removed afterwards unless something was
    /// lost).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Print only the totals, not a line per trial.
    #[arg(long)]
    quiet: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let temporary = args.work_dir.is_none();
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("stasis-kill-campaign-{}", std::process::id()))
    });
    let campaign = Campaign {
        stasis_bin: args.stasis_bin,
        work_dir: work_dir.clone(),
        trials: args.trials,
        time_limit: Duration::from_secs(args.time_limit_secs),
        seed: args.seed,
        kill_after_ms: 200..=1_500,
        verbose: !args.quiet,
    };
    let totals = match campaign.run() {
        Ok(totals) => totals,
        Err(error) => {
            eprintln!(
                "stasis-kill-campaign: {error} (host log: {})",
                work_dir.join("host.log").display()
            );
            return ExitCode::FAILURE;
        }
    };
    println!("{}", totals.summary());
    for loss in &totals.losses {
        println!("  LOSS {loss}");
    }
    if !totals.losses.is_empty() {
        eprintln!("the data folder is kept in {}", work_dir.display());
        return ExitCode::FAILURE;
    }
    if temporary {
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    ExitCode::SUCCESS
}
