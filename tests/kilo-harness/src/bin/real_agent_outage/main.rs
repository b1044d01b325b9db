//! `real-agent-outage`: stasis down for a while during a real kilo conversation with the
//! sidecar (see `stasis_kilo_harness::story::outage`); prints what kilo sent, what stasis
//! stored, and what the rebuilt conversation shows.
//!
//! `cargo build -p stasis-host -p stasis-client -p stasis-kilo-harness &&
//! target/debug/real-agent-outage --outage 30s` (the Kilo CLI from `stasis_kilo`).

use anyhow::Result;
use clap::Parser;
use stasis_kilo_harness::story::{self, checks::show_turns, outage};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "stasis SIGKILLed and restarted during a real kilo conversation: events counted")]
struct Args {
    /// Turns before stasis is killed, in seconds.
    #[arg(long, default_value_t = 5)]
    before: u64,
    /// How long stasis stays down, in seconds.
    #[arg(long, default_value_t = 30)]
    outage: u64,
    /// Turns after it is back, in seconds.
    #[arg(long, default_value_t = 10)]
    after: u64,
    /// The `stasis` binary [default: beside this one].
    #[arg(long, env = "STASIS_BIN")]
    stasis_bin: Option<PathBuf>,
    /// The `stasis-client` binary [default: beside this one].
    #[arg(long, env = "STASIS_CLIENT_BIN")]
    client_bin: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            println!("✗ FAILED: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `Ok(false)` when an event was lost or duplicated, or the conversation differs.
fn run(args: Args) -> Result<bool> {
    let options = outage::OutageOptions {
        host_bin: args.stasis_bin.map_or_else(story::host_bin, Ok)?,
        client_bin: args.client_bin.map_or_else(story::client_bin, Ok)?,
        kilo_bin: None,
        before: Duration::from_secs(args.before),
        outage: Duration::from_secs(args.outage),
        after: Duration::from_secs(args.after),
    };
    let report = outage::run(&options, &|line| println!("{line}"))?;
    println!(
        "\nturns: {} ({} of them while stasis was down)\nevents kilo sent (forwardable): {} ({} while stasis was down)\n\
         stored in stasis (without stasis.*): {}\nduplicated: {}\nlost: {}\nstored but never sent as such (resync states): {}\n\
         kilo's order kept: {}\nstasis held every event sent before its restart {:.1?} after it",
        report.turns,
        report.turns_in_outage,
        report.sent,
        report.sent_in_outage,
        report.stored,
        report.duplicated,
        report.lost,
        report.resent_states,
        report.in_order,
        report.backlog_stored_in
    );
    println!("the sidecar's own events: {:?}", report.sidecar_notes);
    println!("the sidecar's summary: {}", report.sidecar_summary);
    let same = report.rebuilt == report.kilo_turns;
    println!(
        "\nthe rebuilt conversation ({} turns) {} kilo's own ({} turns)",
        report.rebuilt.len(),
        if same { "equals" } else { "DIFFERS from" },
        report.kilo_turns.len()
    );
    if !same {
        print!(
            "rebuilt:\n{}kilo:\n{}",
            show_turns(&report.rebuilt),
            show_turns(&report.kilo_turns)
        );
    }
    Ok(same && report.duplicated == 0 && report.lost == 0 && report.in_order)
}
