//! `sidecar`: run beside one agent runtime until SIGTERM/SIGINT.

use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use stasis_client::boot::kilo_db_path;
use stasis_client::sidecar::{Bound, End, Log, Sidecar, SidecarOptions, StopHandle};
use stasis_client::{AgentRef, Client, Error, exit};

use super::args::SidecarArgs;
use super::output::Output;

pub fn sidecar(client: &Client, out: &Output, args: SidecarArgs) -> Result<u8, Error> {
    let agent = AgentRef::new(&args.town, &args.rig, &args.agent)?;
    let options = SidecarOptions {
        runtime_url: args.runtime_url,
        db: args
            .db
            .unwrap_or_else(|| kilo_db_path(&args.root, agent.agent())),
        token_file: Some(stasis_client::credentials::token_file(
            &args.root,
            &args.container_id,
        )),
        container_id: args.container_id,
        state_dir: args
            .state_dir
            .unwrap_or_else(|| args.root.join(format!("stasis-sidecar-{}", agent.agent()))),
        linger: args.linger,
        snapshot_interval: args.snapshot_interval,
        shutdown_budget: args.shutdown_budget,
        buffer: Bound {
            events: usize::try_from(args.buffer_events).unwrap_or(usize::MAX),
            bytes: usize::try_from(args.buffer_bytes).unwrap_or(usize::MAX),
        },
        start_timeout: args.start_timeout,
        idle_timeout: args.idle_timeout,
        agent,
    };
    let prefix = format!("sidecar {}:", options.agent);
    let quiet = out.quiet;
    let log: Log = Arc::new(move |line| {
        if !quiet {
            eprintln!("{prefix} {line}");
        }
    });
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
