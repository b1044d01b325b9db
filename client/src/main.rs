//! `stasis-client`: the command line over the `stasis_client` library.

mod cli;

use clap::Parser;
use cli::args::{Cli, Command, SnapshotCommand};
use cli::output::Output;
use cli::workspace_args::WorkspaceCommand;
use stasis_client::{Client, Config, Error};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

fn run(cli: Cli) -> Result<u8, Error> {
    let url = cli.url.ok_or_else(|| {
        Error::Config("the server URL is not set: set STASIS_URL or pass --url".into())
    })?;
    let config = Config::new(&url, cli.token)?;
    let quiet = cli.quiet;
    let client = Client::new(config).on_retry(move |notice| {
        if !quiet {
            eprintln!(
                "retrying {} in {:.1?} (attempt {} failed: {})",
                notice.what, notice.delay, notice.attempt, notice.error
            );
        }
    });
    let out = Output { quiet };
    match cli.command {
        Command::Snapshot(SnapshotCommand::Push(args)) => cli::snapshot::push(&client, &out, args),
        Command::Snapshot(SnapshotCommand::Pull(args)) => cli::snapshot::pull(&client, &out, args),
        Command::Workspace(WorkspaceCommand::Push(args)) => {
            cli::workspace::push(&client, &out, args)
        }
        Command::Workspace(WorkspaceCommand::Pull(args)) => {
            cli::workspace::pull(&client, &out, args)
        }
        Command::Boot(args) => cli::boot::boot(&client, &out, args),
        Command::Drain(args) => cli::drain::drain(&client, &out, args),
        Command::Tail(args) => cli::tail::tail(&client, args),
        Command::Restore(args) => cli::restore::restore(&client, &out, args),
        Command::Sidecar(args) => cli::sidecar::sidecar(&client, &out, args),
        Command::Supervise(args) => cli::supervise::supervise(&client, &out, args),
        Command::Up(args) => cli::supervise::up(&client, &out, args),
        Command::Fork(args) => cli::fork::fork(&client, &out, args),
    }
}
