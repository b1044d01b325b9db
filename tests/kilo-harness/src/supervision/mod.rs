//! The supervisor with the real Kilo CLI, played against a running stasis (issue 23's process
//! side):
//!
//! 1. Container A's entrypoint is `stasis-client up` with the Mayor and a polecat (whose working
//!    folder is a git clone); each gets a supervisor process running `kilo serve`. The Mayor
//!    holds a turn, then its `kilo serve` alone is SIGKILLed: its supervisor starts it again in
//!    A, on the same home; it serves the same session, and the next prompt makes kilo send the
//!    model the earlier turns.
//! 2. A polecat turn whose model stalls is aborted at the turn deadline (`stasis.turn.aborted`).
//! 3. SIGTERM to A: the polecat's nudge reaches the model, the save command commits and pushes
//!    its edit, each agent's last snapshot covers its last turn, every phase is in its log, and
//!    `up` exits 0 within the budget.
//! 4. Container K on an empty folder: `up` with no agent named brings back every agent of the
//!    registry, the polecat's worktree restored (`--workspaces`) before its kilo starts; the
//!    model makes the polecat's kilo run `bash` to commit a file (unpushed) and leave an edit
//!    uncommitted, and the supervisor saves the folder at that turn's end; the Mayor starts a
//!    long reply, and K is SIGKILLed whole mid-reply. While no container lives, the user sends
//!    the Mayor a message.
//! 5. Container A2 on an empty folder: `up` again brings both back (the Mayor's session
//!    hydrated, the polecat's worktree K's byte for byte, `git status` and `git log` the same);
//!    by itself it finishes the cut reply with exactly one continuation carrying the
//!    text stasis held, and delivers the gap's message once. Then container B heartbeats, and
//!    A2's supervisors, fenced, kill their kilos at once and `up` exits 9.
//! 6. The Mayor forked at its first turn (`stasis-client fork`), started by container C's `up`
//!    as an agent of its own: its kilo lists the session up to that turn only and sends the
//!    model that shorter history with a new prompt.
//!
//! Measured on the way: a kilo crash to its session served again, and kilo's own start in it;
//! A2's start to the continuation reaching the model, and kilo's own start in it.

mod acts;
mod commands;
mod container;
mod fork;
pub mod log;
mod revival;
mod waits;
mod workspace;

use crate::story::StasisApi;
use crate::{FakeModel, Reply, Script};
use anyhow::{Context, Result};
use container::Entrypoint;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The rig of both agents.
pub const RIG: &str = "hq";
/// The Mayor's first prompt and its reply.
pub const PROMPT_PLAN: &str = "What is on today's plan?";
/// See [`PROMPT_PLAN`].
pub const REPLY_PLAN: &str = "First the release notes, then the build check.";
/// The Mayor's prompt after its kilo came back.
pub const PROMPT_BACK: &str = "Where were we before the crash?";
/// The Mayor and the polecat.
const MAYOR: &str = "mayor";
const POLECAT: &str = "polecat";
/// A prompt whose reply streams slowly (the container is killed while it does).
const PROMPT_LONG: &str = crate::story::script::PROMPT_LONG;
/// The polecat's first prompt.
pub const PROMPT_FIX: &str = "Fix the typo in the notes";
/// A prompt whose reply never comes (the model stalls for an hour).
pub const PROMPT_STALL: &str = "Think about this for a very long time";
/// What the polecat's nudge starts with (the supervisor's default text for polecats).
pub const NUDGE_START: &str = "The container is shutting down.";
/// The turn deadline the containers run with: a turn here takes about 1 s, but up to 20 s on a
/// machine loaded 6x over (where a 10 s deadline aborted the Mayor's first turn).
pub const TURN_DEADLINE: Duration = Duration::from_secs(25);
/// The save command: the polecat's edit committed and pushed.
pub const SAVE_COMMAND: &str =
    "git add -A && git commit -q -m 'WIP: container eviction save' && git push -q origin HEAD";

/// Where it plays, and with what.
#[derive(Debug, Clone)]
pub struct SupervisionOptions {
    /// stasis's base URL.
    pub url: String,
    /// Its secret (a town token is minted from it).
    pub secret: String,
    /// The `stasis-client` binary.
    pub client_bin: PathBuf,
    /// The Kilo CLI.
    pub kilo_bin: PathBuf,
}

/// What was measured.
#[derive(Debug, Clone, Default)]
pub struct SupervisionReport {
    /// The town.
    pub town: String,
    /// From the SIGKILL of the Mayor's kilo to its session served again.
    pub crash_to_served: Duration,
    /// Of that: kilo's own start (spawn to its listening line), as its supervisor measured.
    pub kilo_start: Duration,
    /// Of that: the restart delay.
    pub restart_delay: Duration,
    /// Of that: from the SIGKILL to the new kilo spawned, stasis's own part (the exit
    /// noticed, the restart decided, the process started), on the wall clock.
    pub kill_to_respawn: Duration,
    /// Of that: from the SIGKILL to the supervisor collecting the exit (the kernel's part).
    pub kill_to_exit: Duration,
    /// From the stalled prompt to its abort.
    pub stalled_turn_aborted_after: Duration,
    /// From SIGTERM to `up`'s exit.
    pub eviction_took: Duration,
    /// From container B's heartbeat to A2's exit (fenced).
    pub fenced_exit_after: Duration,
    /// From A2's `up` to the continuation of the cut reply reaching the model.
    pub revived_to_continuation: Duration,
    /// Of that: the Mayor's kilo's own start (spawn to its listening line) in A2.
    pub revived_kilo_start: Duration,
    /// Of that: stasis's own part, from the Mayor's log: all but kilo's start and its answer to
    /// the sidecar's `GET /event` (its instance bootstrap).
    pub revived_stasis_share: Duration,
    /// The Mayor's session in A2 after recovery, one line per message.
    pub recovered: String,
}

/// The model's script.
fn script() -> Script {
    use crate::story::{resume, script};
    Script::new()
        .when(
            resume::CONTINUATION_MARK,
            Reply::text(resume::REPLY_CONTINUED),
        )
        .when(resume::GAP_NOTE, Reply::text(resume::REPLY_GAP))
        .when(
            PROMPT_LONG,
            Reply::paced_text(&script::long_reply(), script::LONG_REPLY_PACE),
        )
        .when(fork::PROMPT_FORK, Reply::text(fork::REPLY_FORK))
        .when(PROMPT_PLAN, Reply::text(REPLY_PLAN))
        .when(PROMPT_BACK, Reply::text("We were planning the release."))
        .when(PROMPT_FIX, Reply::text("Fixed the typo."))
        .when(
            PROMPT_STALL,
            Reply::paced_text("Never mind.", Duration::from_secs(3600)),
        )
        .when(NUDGE_START, Reply::text("Committing and pushing now."))
        .when(
            workspace::PROMPT_WORK,
            Reply::bash(workspace::WORK_COMMAND, "Commit the entry point"),
        )
        .title("Supervised")
}

/// Plays the six acts; `narrate` gets a line per step.
///
/// # Errors
///
/// When a step or a check fails (the error says which, with the container's output).
pub fn play(options: &SupervisionOptions, narrate: &dyn Fn(&str)) -> Result<SupervisionReport> {
    // STASIS_KEEP_WORK=1 keeps the containers' folders and logs for a look afterwards.
    let keep = std::env::var_os("STASIS_KEEP_WORK").is_some_and(|v| v == "1");
    let temp = tempfile::Builder::new()
        .prefix("stasis-supervision-")
        .disable_cleanup(keep)
        .tempdir()?;
    if keep {
        narrate(&format!("(kept: {})", temp.path().display()));
    }
    let model = FakeModel::start(script())?;
    let town = format!("sup-{}", crate::story::random_suffix());
    let token = log::town_token(&options.secret, &town)?;
    let stage = Stage {
        api: StasisApi::new(&options.url, &token),
        town,
        root: temp.path().join("tmp"),
        work: temp.path().to_owned(),
        model: &model,
        options,
        narrate,
    };
    std::fs::create_dir_all(&stage.root)?;
    let mut report = SupervisionReport {
        town: stage.town.clone(),
        ..SupervisionReport::default()
    };
    acts::play(&stage, &mut report)?;
    Ok(report)
}

/// What every act needs.
pub(crate) struct Stage<'a> {
    api: StasisApi,
    town: String,
    /// The containers' `/tmp`.
    root: PathBuf,
    /// Outside the containers: logs, the git remote, container B's folder.
    work: PathBuf,
    model: &'a FakeModel,
    options: &'a SupervisionOptions,
    narrate: &'a dyn Fn(&str),
}

impl Stage<'_> {
    fn say(&self, line: &str) {
        (self.narrate)(line);
    }

    fn agent_path(&self, agent: &str) -> String {
        format!("/api/towns/{}/rigs/{RIG}/agents/{agent}", self.town)
    }

    /// `stasis-client up` as container `id`, with `agents` named, into `log`.
    fn up(&self, id: &str, agents: &[&str], log: &Path) -> Result<Entrypoint> {
        let mut args: Vec<String> = ["up", "--town", &self.town, "--container-id", id]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.push("--root".into());
        args.push(self.root.display().to_string());
        for agent in agents {
            args.push("--agent".into());
            args.push((*agent).to_owned());
        }
        let deadline = format!("{}ms", TURN_DEADLINE.as_millis());
        let defaults = [
            ("--turn-deadline", deadline.as_str()),
            // kilo took up to 56 s to print its listening line on a machine loaded 5x over.
            ("--start-timeout", "150s"),
            ("--fence-check", "500ms"),
            ("--restart-delay", "200ms"),
            ("--snapshot-interval", "1s"),
            ("--nudge-window", "60s"),
            ("--eviction-budget", "120s"),
            ("--stop-grace", "10s"),
            ("--save-timeout", "30s"),
            ("--save-command", SAVE_COMMAND),
            ("--workspace-interval", "1s"),
        ];
        for (name, value) in with_overrides(
            &defaults,
            &std::env::var("STASIS_STORY_UP_ARGS").unwrap_or_default(),
        )? {
            args.push(name);
            args.push(value);
        }
        // Every agent's working folder kept as its workspace; switched off to see the
        // polecat's worktree check fail.
        if std::env::var_os("STASIS_STORY_NO_WORKSPACES").is_none_or(|v| v != "1") {
            args.push("--workspaces".into());
        }
        args.push("--".into());
        args.push(self.options.kilo_bin.display().to_string());
        for arg in ["serve", "--port", "0", "--hostname", "127.0.0.1"] {
            args.push(arg.into());
        }
        let mut env = crate::kilo_env(&self.model.base_url())?;
        allow_bash(&mut env)?;
        env.push(("STASIS_URL".into(), self.api.base().to_owned()));
        env.push(("STASIS_TOKEN".into(), self.api.token().to_owned()));
        Entrypoint::start(&self.options.client_bin, &args, &env, log)
    }
}

/// kilo's configuration with `bash` allowed without asking, as an unattended polecat runs: by
/// default kilo asks before a command that writes (a redirection, `git commit`), and nobody
/// would answer in a container.
fn allow_bash(env: &mut [(String, String)]) -> Result<()> {
    for (name, value) in env
        .iter_mut()
        .filter(|(name, _)| name == "KILO_CONFIG_CONTENT")
    {
        let mut config: serde_json::Value =
            serde_json::from_str(value).with_context(|| format!("{name} is not JSON"))?;
        let object = config
            .as_object_mut()
            .with_context(|| format!("{name} is not an object"))?;
        object.insert(
            "permission".into(),
            serde_json::Value::Object(
                [("bash".to_owned(), serde_json::Value::from("allow"))]
                    .into_iter()
                    .collect(),
            ),
        );
        *value = config.to_string();
    }
    Ok(())
}

/// The story's `supervise` options with `overrides` (`--name=value;--name=value`, from
/// `STASIS_STORY_UP_ARGS`) in place of or beside them: how a check is run with its feature
/// switched off (e.g. `--turn-deadline=0s`, `--cut-reply=nothing`), to see it fail.
fn with_overrides(defaults: &[(&str, &str)], overrides: &str) -> Result<Vec<(String, String)>> {
    let mut options: Vec<(String, String)> = defaults
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    for pair in overrides.split(';').filter(|p| !p.trim().is_empty()) {
        let (name, value) = pair
            .trim()
            .split_once('=')
            .with_context(|| format!("{pair:?} in STASIS_STORY_UP_ARGS is not --name=value"))?;
        match options.iter_mut().find(|(known, _)| known == name) {
            Some(option) => option.1 = value.to_owned(),
            None => options.push((name.to_owned(), value.to_owned())),
        }
    }
    Ok(options)
}
