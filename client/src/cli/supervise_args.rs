//! The arguments of `supervise` and `up`: the tuning both share (`up` hands it to every
//! `supervise` it starts), and each command's own.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use stasis_client::resume::CutReplyMode;
use stasis_client::supervisor::up::AgentSpec;
use stasis_client::supervisor::{EvictionOptions, RestartPolicy, SuperviseOptions};

use super::parse_budget;

/// How every supervisor behaves.
#[derive(Debug, Clone, Args)]
pub struct Tuning {
    /// How long the runtime may take to print its `listening on http://...` line.
    #[arg(long, default_value = "60s", value_parser = parse_budget)]
    pub start_timeout: Duration,
    /// The delay before the second restart in a row (the first is immediate); it doubles for
    /// each crash in a row after that.
    #[arg(long, default_value = "500ms", value_parser = parse_budget)]
    pub restart_delay: Duration,
    /// The longest delay between restarts.
    #[arg(long, default_value = "30s", value_parser = parse_budget)]
    pub restart_delay_max: Duration,
    /// Crashes allowed within --start-limit-interval; one more ends the supervisor (exit 10).
    #[arg(long, default_value_t = 5)]
    pub start_limit_burst: u32,
    /// The window --start-limit-burst counts in.
    #[arg(long, default_value = "2m", value_parser = parse_budget)]
    pub start_limit_interval: Duration,
    /// A turn busy longer than this is aborted (POST /session/{id}/abort); 0 never aborts.
    #[arg(long, default_value = "60m", value_parser = parse_budget)]
    pub turn_deadline: Duration,
    /// How often the town is asked whether another container took it over.
    #[arg(long, default_value = "5s", value_parser = parse_budget)]
    pub fence_check: Duration,
    /// How often kilo.db is checked and pushed when it changed (a turn's end pushes at once).
    #[arg(long, default_value = "5s", value_parser = parse_budget)]
    pub snapshot_interval: Duration,
    /// Time from SIGTERM to exit, every eviction phase included.
    #[arg(long, default_value = "14m", value_parser = parse_budget)]
    pub eviction_budget: Duration,
    /// How long the nudged agent may work before its turn is aborted.
    #[arg(long, default_value = "10m", value_parser = parse_budget)]
    pub nudge_window: Duration,
    /// The eviction's message for a role, ROLE=TEXT (repeatable; an empty TEXT: no nudge).
    /// Defaults: polecat and refinery get the seed's texts; other roles (the Mayor) none.
    #[arg(long = "nudge", value_name = "ROLE=TEXT")]
    pub nudges: Vec<String>,
    /// Run with `sh -c` in the agent's working folder once the agent stopped working, e.g.
    /// 'git add -A && git commit -m "WIP: container eviction save" && git push'.
    #[arg(long)]
    pub save_command: Option<String>,
    /// The save command's own limit.
    #[arg(long, default_value = "2m", value_parser = parse_budget)]
    pub save_timeout: Duration,
    /// How long the runtime may take to exit on SIGTERM before SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_budget)]
    pub stop_grace: Duration,
    /// What a start does with a reply the runtime's death cut: a continuation carrying the text
    /// streamed before the cut, the user's message sent again, or nothing (only recorded).
    #[arg(long, value_enum, default_value_t = CutReply::Continue)]
    pub cut_reply: CutReply,
    /// Saves of the workspace while a turn runs are at least this far apart (a turn's end
    /// saves at once; an unchanged folder sends nothing).
    #[arg(long, default_value = "5s", value_parser = parse_budget)]
    pub workspace_interval: Duration,
    /// Leave out of the workspace what matches, in gitignore syntax (repeatable); what git
    /// ignores there is always left out.
    #[arg(long = "workspace-exclude", value_name = "GLOB")]
    pub workspace_excludes: Vec<String>,
    /// Keep in the workspace what matches although git ignores it (repeatable).
    #[arg(long = "workspace-include", value_name = "GLOB")]
    pub workspace_includes: Vec<String>,
}

/// `--cut-reply`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CutReply {
    /// The model is told its reply was cut and given what it had written.
    Continue,
    /// The user's message is sent again.
    Resend,
    /// Nothing is sent; the decision is still recorded in the log.
    Nothing,
}

impl CutReply {
    /// The resume step's mode.
    pub fn mode(self) -> CutReplyMode {
        match self {
            CutReply::Continue => CutReplyMode::Continue,
            CutReply::Resend => CutReplyMode::Resend,
            CutReply::Nothing => CutReplyMode::Nothing,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CutReply::Continue => "continue",
            CutReply::Resend => "resend",
            CutReply::Nothing => "nothing",
        }
    }
}

impl Tuning {
    /// Applies the tuning to `options`.
    pub fn apply(&self, options: &mut SuperviseOptions) -> Result<(), String> {
        options.start_timeout = self.start_timeout;
        options.restart = RestartPolicy {
            initial: self.restart_delay,
            max: self.restart_delay_max,
            burst: self.start_limit_burst,
            interval: self.start_limit_interval,
            ..RestartPolicy::default()
        };
        options.turn_deadline = Some(self.turn_deadline).filter(|d| !d.is_zero());
        options.fence_check = self.fence_check;
        options.snapshot_interval = self.snapshot_interval;
        let mut eviction = EvictionOptions {
            budget: self.eviction_budget,
            nudge_window: self.nudge_window,
            save_command: self.save_command.clone(),
            save_timeout: self.save_timeout,
            stop_grace: self.stop_grace,
            ..EvictionOptions::default()
        };
        for nudge in &self.nudges {
            let (role, text) = nudge
                .split_once('=')
                .ok_or_else(|| format!("--nudge {nudge:?} is not ROLE=TEXT"))?;
            eviction.nudges.insert(role.to_owned(), text.to_owned());
        }
        options.eviction = eviction;
        options.workspace.interval = self.workspace_interval;
        options.workspace.excludes = self.workspace_excludes.clone();
        options.workspace.includes = self.workspace_includes.clone();
        Ok(())
    }

    /// The same tuning as command-line arguments (what `up` hands each `supervise`).
    pub fn to_args(&self) -> Vec<String> {
        let duration = |d: Duration| format!("{}ms", d.as_millis());
        let mut args = vec![
            ("--start-timeout", duration(self.start_timeout)),
            ("--restart-delay", duration(self.restart_delay)),
            ("--restart-delay-max", duration(self.restart_delay_max)),
            ("--start-limit-burst", self.start_limit_burst.to_string()),
            (
                "--start-limit-interval",
                duration(self.start_limit_interval),
            ),
            ("--turn-deadline", duration(self.turn_deadline)),
            ("--fence-check", duration(self.fence_check)),
            ("--snapshot-interval", duration(self.snapshot_interval)),
            ("--eviction-budget", duration(self.eviction_budget)),
            ("--nudge-window", duration(self.nudge_window)),
            ("--save-timeout", duration(self.save_timeout)),
            ("--stop-grace", duration(self.stop_grace)),
            ("--cut-reply", self.cut_reply.name().to_owned()),
            ("--workspace-interval", duration(self.workspace_interval)),
        ];
        for glob in &self.workspace_excludes {
            args.push(("--workspace-exclude", glob.clone()));
        }
        for glob in &self.workspace_includes {
            args.push(("--workspace-include", glob.clone()));
        }
        for nudge in &self.nudges {
            args.push(("--nudge", nudge.clone()));
        }
        if let Some(command) = &self.save_command {
            args.push(("--save-command", command.clone()));
        }
        args.into_iter()
            .flat_map(|(name, value)| [name.to_owned(), value])
            .collect()
    }
}

/// `supervise`'s arguments.
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    /// Town id.
    #[arg(long, env = "STASIS_TOWN")]
    pub town: String,
    /// Rig id.
    #[arg(long, env = "STASIS_RIG")]
    pub rig: String,
    /// Agent id.
    #[arg(long, env = "STASIS_AGENT")]
    pub agent: String,
    /// The agent's role (mayor, polecat, refinery, ...): picks its eviction nudge.
    #[arg(long, env = "STASIS_ROLE")]
    pub role: String,
    /// This container's id, as given to or printed by `boot`.
    #[arg(long, env = "STASIS_CONTAINER_ID")]
    pub container_id: String,
    /// Directory holding the agent homes ({root}/agent-home-{agent}), the sidecar state and the
    /// container's token file.
    #[arg(long, env = "STASIS_ROOT", default_value = "/tmp")]
    pub root: PathBuf,
    /// The runtime's working folder (a polecat's worktree) [default: {home}/work].
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// The agent's dispatch (a JSON file `up` writes), for the resume step.
    #[arg(long)]
    pub dispatch: Option<PathBuf>,
    /// Keep this folder as the agent's workspace (usually its --workdir): restored before the
    /// runtime starts when it is missing or empty, saved when a turn ends, at most every
    /// --workspace-interval while a turn runs, and at the eviction after --save-command. Its
    /// state (the last saved version, the scan's index) is {root}/stasis-workspace-{agent}.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub tuning: Tuning,
    /// The runtime's command, e.g. -- kilo serve --port 0 --hostname 127.0.0.1
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `up`'s arguments.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Town id.
    #[arg(long, env = "STASIS_TOWN")]
    pub town: String,
    /// This container's id (default: a fresh random one, printed).
    #[arg(long, env = "STASIS_CONTAINER_ID")]
    pub container_id: Option<String>,
    /// Directory holding the agent homes.
    #[arg(long, env = "STASIS_ROOT", default_value = "/tmp")]
    pub root: PathBuf,
    /// An agent to start besides the registry's, RIG/AGENT:ROLE (repeatable).
    #[arg(long = "agent", value_name = "RIG/AGENT:ROLE")]
    pub agents: Vec<AgentSpec>,
    /// Keep every agent's working folder, {root}/agent-home-{agent}/work, as its workspace
    /// (each supervisor gets --workspace with it; see `supervise --help`).
    #[arg(long)]
    pub workspaces: bool,
    #[command(flatten)]
    pub tuning: Tuning,
    /// The runtime's command for every agent, e.g. -- kilo serve --port 0 --hostname 127.0.0.1
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}
