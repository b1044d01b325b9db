//! `supervise` (one agent's runtime, for its whole life) and `up` (a container's entrypoint: a
//! supervisor per agent).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use stasis_client::resume::{self, CutReplyMode, DispatchPrompt, ResumeOptions};
use stasis_client::supervisor::up::{self, UpOptions};
use stasis_client::supervisor::{
    OnReady, Outcome, ReadyRuntime, SignalHandle, SuperviseOptions, Supervisor,
};
use stasis_client::{AgentRef, Client, Error, exit, town};

use super::output::Output;
use super::supervise_args::{SuperviseArgs, UpArgs};

/// The resume step run after each start: the session is chosen (or created with the
/// dispatch's prompt), a reply the last death cut is finished once, the inbox is delivered, and
/// a follower delivers what arrives while this runtime lives.
fn resume_step(cut_reply: CutReplyMode) -> OnReady {
    Arc::new(move |ready: &ReadyRuntime| {
        let dispatch = ready
            .dispatch
            .as_deref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice::<DispatchPrompt>(&bytes).ok());
        let options = ResumeOptions {
            dispatch,
            cut_reply,
            ..ResumeOptions::default()
        };
        let log = Arc::clone(&ready.log);
        let outcome =
            resume::after_start(&ready.client, &ready.agent, &ready.url, &options, &|line| {
                log(line)
            })?;
        let follower = resume::follow_inbox(
            &ready.client,
            &ready.agent,
            &ready.url,
            &outcome.session_id,
            outcome.inbox_cursor,
            Arc::clone(&ready.log),
        )?;
        while ready.alive.load(Ordering::SeqCst) {
            std::thread::sleep(resume::STOP_CHECK);
        }
        follower.stop();
        Ok(())
    })
}

pub fn supervise(client: &Client, out: &Output, args: SuperviseArgs) -> Result<u8, Error> {
    let agent = AgentRef::new(&args.town, &args.rig, &args.agent)?;
    let mut options =
        SuperviseOptions::new(agent, args.role, args.container_id, args.root, args.command);
    options.workdir = args.workdir;
    options.dispatch = args.dispatch;
    options.workspace.dir = args.workspace;
    args.tuning.apply(&mut options).map_err(Error::Config)?;
    let log = out.log(format!("supervisor {}:", options.agent));
    let supervisor = Supervisor::new(
        options,
        resume_step(args.tuning.cut_reply.mode()),
        Arc::clone(&log),
    );
    deliver_signals(supervisor.signal_handle())?;
    match supervisor.run(client) {
        Outcome::Evicted => {
            log("evicted: every phase done");
            Ok(exit::OK)
        }
        Outcome::OverBudget(what) => {
            eprintln!("error: the eviction budget ran out: {what}");
            Ok(exit::OVER_BUDGET)
        }
        Outcome::GaveUp(message) => {
            eprintln!("error: {message}");
            Ok(exit::GAVE_UP)
        }
        Outcome::Fenced(error) | Outcome::Failed(error) => Err(error),
    }
}

/// SIGTERM or SIGINT starts the eviction; a second one closes the nudge window.
fn deliver_signals(handle: SignalHandle) -> Result<(), Error> {
    let mut signals = Signals::new([SIGTERM, SIGINT])
        .map_err(|e| Error::io("installing the SIGTERM/SIGINT handlers", e))?;
    std::thread::Builder::new()
        .name("supervisor-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                handle.terminate(if signal == SIGTERM {
                    "SIGTERM"
                } else {
                    "SIGINT"
                });
            }
        })
        .map(drop)
        .map_err(|e| Error::io("starting the signal thread", e))
}

pub fn up(client: &Client, out: &Output, args: UpArgs) -> Result<u8, Error> {
    let container_id = args.container_id.unwrap_or_else(town::new_container_id);
    eprintln!("container_id: {container_id}");
    let exe = std::env::current_exe().map_err(|e| Error::io("finding this binary", e))?;
    let mut supervise_args = args.tuning.to_args();
    if out.quiet {
        supervise_args.insert(0, "--quiet".into());
    }
    let options = UpOptions {
        town: args.town,
        container_id,
        root: args.root,
        agents: args.agents,
        workspaces: args.workspaces,
        supervise_args,
        command: args.command,
        exe,
    };
    let log = out.log("up:".into());
    up::up(client, &options, &log)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::args::{Cli, Command};

    fn parse(line: &[&str]) -> Command {
        Cli::try_parse_from(line)
            .expect("the command line parses")
            .command
    }

    #[test]
    fn up_hands_every_supervisor_its_own_tuning() {
        let Command::Up(up) = parse(&[
            "stasis-client",
            "up",
            "--town",
            "t",
            "--agent",
            "hq/mayor:mayor",
            "--turn-deadline",
            "90s",
            "--start-limit-burst",
            "2",
            "--nudge",
            "mayor=Save now",
            "--save-command",
            "git push",
            "--workspace-interval",
            "2s",
            "--workspace-exclude",
            "*.log",
            "--workspace-include",
            "node_modules/",
            "--",
            "kilo",
            "serve",
        ]) else {
            panic!("an up command");
        };
        let mut line = vec!["stasis-client", "supervise", "--town", "t", "--rig", "hq"];
        line.extend([
            "--agent",
            "mayor",
            "--role",
            "mayor",
            "--container-id",
            "c-1",
        ]);
        let args = up.tuning.to_args();
        line.extend(args.iter().map(String::as_str));
        line.extend(["--", "kilo", "serve"]);
        let Command::Supervise(supervise) = parse(&line) else {
            panic!("a supervise command");
        };
        assert_eq!(
            format!("{:?}", supervise.tuning),
            format!("{:?}", up.tuning)
        );
        assert_eq!(supervise.command, ["kilo", "serve"]);
    }

    #[test]
    fn the_command_lines_defaults_are_the_librarys() {
        let Command::Supervise(args) = parse(&[
            "stasis-client",
            "supervise",
            "--town",
            "t",
            "--rig",
            "r",
            "--agent",
            "a",
            "--role",
            "polecat",
            "--container-id",
            "c-1",
            "--",
            "kilo",
            "serve",
        ]) else {
            panic!("a supervise command");
        };
        let agent = AgentRef::new("t", "r", "a").expect("valid ids");
        // The root may come from `STASIS_ROOT` (the test scripts set it): not a tuning default.
        let defaults = SuperviseOptions::new(
            agent.clone(),
            "polecat".into(),
            "c-1".into(),
            args.root.clone(),
            vec!["kilo".into(), "serve".into()],
        );
        let mut options =
            SuperviseOptions::new(agent, args.role, args.container_id, args.root, args.command);
        args.tuning.apply(&mut options).expect("valid tuning");
        assert_eq!(format!("{options:?}"), format!("{defaults:?}"));
    }
}
