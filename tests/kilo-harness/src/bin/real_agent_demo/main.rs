//! `real-agent-demo`: the SPEC's "same story with a real agent", told step by step against a
//! local `stasis serve` it starts (or `--url`): the Kilo CLI and the sidecar SIGKILLed mid-reply
//! in container A, the Mayor back in container B with its whole conversation. Prints the
//! conversation before and after; exits non-zero when a check fails.
//!
//! Needs the Kilo CLI (`source scripts/setup.sh && stasis_kilo`) and the workspace's binaries
//! (`cargo build -p stasis-host -p stasis-client -p stasis-kilo-harness`).

use anyhow::{Context, Result};
use clap::Parser;
use stasis_kilo_harness::story::{self, LocalHost, StoryOptions, StoryReport, checks::show_turns};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    about = "The same story with a real agent: kilo killed mid-reply, the Mayor back in a new container"
)]
struct Args {
    /// Run against this stasis (e.g. http://127.0.0.1:8787, or wrangler dev) instead of a host
    /// started here.
    #[arg(long, requires = "secret")]
    url: Option<String>,
    /// The secret of --url's server (the demo mints a token for its own town).
    #[arg(long, env = "STASIS_SECRET", hide_env_values = true)]
    secret: Option<String>,
    /// The `stasis` binary to start [default: beside this one].
    #[arg(long, env = "STASIS_BIN")]
    stasis_bin: Option<PathBuf>,
    /// The `stasis-client` binary [default: beside this one].
    #[arg(long, env = "STASIS_CLIENT_BIN")]
    client_bin: Option<PathBuf>,
    /// The Kilo CLI [default: $STASIS_KILO_BIN, else node_modules].
    #[arg(long)]
    kilo_bin: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            println!("\n✗ FAILED: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    let temp = tempfile::Builder::new()
        .prefix("real-agent-demo-")
        .tempdir()?;
    let client_bin = match args.client_bin {
        Some(bin) => bin,
        None => story::client_bin()?,
    };
    let kilo = match &args.kilo_bin {
        Some(bin) => bin.clone(),
        None => stasis_kilo_harness::kilo_bin()?,
    };
    println!(
        "real-agent demo: the Mayor (the real Kilo CLI {}) killed mid-reply, back in a new container",
        stasis_kilo_harness::kilo_version(&kilo)?
    );
    let (host, url, secret) = match (args.url, args.secret) {
        (Some(url), Some(secret)) => (None, url, secret),
        _ => {
            let bin = match args.stasis_bin {
                Some(bin) => bin,
                None => story::host_bin()?,
            };
            let data = temp.path().join("host-data");
            let host = LocalHost::start(&bin, &data).context("starting a local stasis")?;
            let (url, secret) = (host.url.clone(), host.secret.clone());
            (Some(host), url, secret)
        }
    };
    println!(
        "   stasis {url}{}\n",
        if host.is_some() {
            " (started here)"
        } else {
            ""
        }
    );
    let options = StoryOptions {
        url,
        secret,
        client_bin,
        kilo_bin: Some(kilo),
        work: Some(temp.path().to_owned()),
    };
    let report = story::play(&options, &|line| println!("{line}"))?;
    print_conversations(&report);
    drop(host);
    Ok(())
}

fn print_conversations(report: &StoryReport) {
    println!("\nBefore: what container A's kilo showed when it was killed");
    print!("{}", show_turns(&report.held));
    println!("    user: {:?}", story::script::PROMPT_LONG);
    println!(
        "    assistant (streaming; {} pieces sent when the group died): {:?} …",
        report.deltas_sent, report.cut.text
    );
    println!("\nAfter: the Mayor's dispatch in container B (prior_conversation.turns)");
    print!("{}", show_turns(&report.dispatch.prior_conversation.turns));
    println!("\nAnd kilo in container B after the new prompt");
    print!("{}", show_turns(&report.after));
    println!(
        "\nSummary\n   ✓ every check passed\n   recovery: boot {:.0?}, then kilo serve answering with the \
         restored session: {:.1?} in all (kilo's own start {:.1?})",
        report.boot_took, report.recovery, report.kilo_started_in
    );
}
