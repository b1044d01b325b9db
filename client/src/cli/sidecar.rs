//! `sidecar`: run beside one agent runtime until SIGTERM/SIGINT.

use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use stasis_client::boot::kilo_db_path;
use stasis_client::sidecar::{Bound, End, Log, Sidecar, SidecarOptions, StopHandle};
use stasis_client::{AgentRef, Client, Error, exit};

use super::output::Output;
use super::sidecar_args::SidecarArgs;

/// The options the command line gives; whatever it leaves out keeps its default.
fn options_from(args: SidecarArgs) -> Result<SidecarOptions, Error> {
    let agent = AgentRef::new(&args.town, &args.rig, &args.agent)?;
    let db = args
        .db
        .unwrap_or_else(|| kilo_db_path(&args.root, agent.agent()));
    let state_dir = args
        .state_dir
        .unwrap_or_else(|| args.root.join(format!("stasis-sidecar-{}", agent.agent())));
    let token_file = stasis_client::credentials::token_file(&args.root, &args.container_id);
    let mut options =
        SidecarOptions::new(agent, args.runtime_url, db, args.container_id, state_dir);
    options.token_file = Some(token_file);
    options.linger = args.linger;
    options.snapshot_interval = args.snapshot_interval;
    options.shutdown_budget = args.shutdown_budget;
    options.buffer = Bound {
        events: usize::try_from(args.buffer_events).unwrap_or(usize::MAX),
        bytes: usize::try_from(args.buffer_bytes).unwrap_or(usize::MAX),
    };
    options.start_timeout = args.start_timeout;
    options.idle_timeout = args.idle_timeout;
    Ok(options)
}

pub fn sidecar(client: &Client, out: &Output, args: SidecarArgs) -> Result<u8, Error> {
    let options = options_from(args)?;
    let log = out.log(format!("sidecar {}:", options.agent));
    let sidecar = Sidecar::new(options, Arc::clone(&log));
    stop_on_signals(sidecar.stop_handle(), log)?;
    let report = sidecar.run(client);
    out.result(&report.summary)?;
    match report.end {
        End::Stopped => Ok(exit::OK),
        End::OverBudget(undone) => {
            eprintln!("error: the shutdown budget ran out: {undone}");
            Ok(exit::OVER_BUDGET)
        }
        End::Failed(error) => Err(error),
    }
}

/// SIGTERM or SIGINT asks for the stop; a second one ends the budget.
fn stop_on_signals(stop: StopHandle, log: Log) -> Result<(), Error> {
    let mut signals = Signals::new([SIGTERM, SIGINT])
        .map_err(|e| Error::io("installing the SIGTERM/SIGINT handlers", e))?;
    std::thread::Builder::new()
        .name("sidecar-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                let name = if signal == SIGTERM {
                    "SIGTERM"
                } else {
                    "SIGINT"
                };
                log(&format!("{name} received"));
                stop.stop();
            }
        })
        .map(drop)
        .map_err(|e| Error::io("starting the signal thread", e))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::args::{Cli, Command};

    #[test]
    fn the_command_lines_defaults_are_the_librarys() {
        let cli = Cli::try_parse_from([
            "stasis-client",
            "sidecar",
            "--town",
            "t",
            "--rig",
            "r",
            "--agent",
            "a",
            "--runtime-url",
            "http://127.0.0.1:4096",
            "--container-id",
            "c-1",
            "--root",
            "/tmp/root",
        ])
        .expect("the command line parses");
        let Command::Sidecar(args) = cli.command else {
            panic!("a sidecar command: {:?}", cli.command);
        };
        let options = options_from(args).expect("valid ids");
        let mut defaults = SidecarOptions::new(
            AgentRef::new("t", "r", "a").expect("valid ids"),
            "http://127.0.0.1:4096".into(),
            kilo_db_path(std::path::Path::new("/tmp/root"), "a"),
            "c-1".into(),
            "/tmp/root/stasis-sidecar-a".into(),
        );
        defaults.token_file = Some(stasis_client::credentials::token_file(
            std::path::Path::new("/tmp/root"),
            "c-1",
        ));
        assert_eq!(format!("{options:?}"), format!("{defaults:?}"));
    }
}
