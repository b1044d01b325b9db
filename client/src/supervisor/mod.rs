//! The agent's supervisor: owns its runtime (`kilo serve ...`) for the agent's whole life, the way
//! Litestream's `replicate -exec` owns its application.
//!
//! - **Start**: the agent's home environment (`HOME`, `KILO_TEST_HOME`, every `XDG_*_HOME`,
//!   `TMPDIR` under `{root}/agent-home-{agent}`; `home.rs`), kilo.db hydrated when the home has
//!   none (its sessions made in another home, a fork's source's, moved to this agent's working
//!   folder: `relocate.rs`), the runtime started in a process group of its own and its URL read from its listening
//!   line (`process.rs`), the [`sidecar`](crate::sidecar) beside it, the agent's session and port
//!   in the town's registry (`registry.rs`), then the [`OnReady`] hook (where the cut turn is
//!   finished and the inbox delivered) once the sidecar follows the runtime's events.
//! - **Self-healing** (`run.rs`): a runtime that exits or dies is started again on the same home
//!   after a delay that doubles from 0.5 s to 30 s, until more than `burst` crashes within
//!   `interval` end the supervisor ([`exit::GAVE_UP`](crate::exit::GAVE_UP);
//!   `start_limit.rs`). A turn busy past the turn deadline is aborted (`POST
//!   /session/{id}/abort`; `status.rs` follows `session.status`).
//! - **Workspace** (`workspace.rs`, with [`WorkspaceKeeping::dir`]): the agent's folder
//!   restored before the first start when it is missing or empty, saved when a turn ends, at
//!   most every interval while a turn runs, and at the eviction after the save command.
//! - **Eviction** on SIGTERM (`eviction.rs`): the town told, the agent nudged by role, its turn
//!   awaited within the nudge window then aborted, the save command run, the workspace saved,
//!   the runtime stopped, the events flushed and a last snapshot pushed, exit 0, within the
//!   budget.
//! - **Fenced**: once another container has taken the town over (a write answered 409
//!   `container_fenced`, or the town naming another current container), the runtime is killed
//!   at once and the supervisor ends with [`exit::FENCED`](crate::exit::FENCED).
//!
//! Every start, exit, restart, give-up, abort and eviction phase is an event in the agent's log
//! (`journal.rs`): `stasis.runtime.{started,exited,restarting,gave_up}`,
//! `stasis.turn.aborted`, `stasis.eviction.<phase>`, `stasis.workspace.{restored,saved,save_failed}`.
//!
//! [`up`] is the container's entrypoint: boot, then one supervisor process per agent, reaping
//! every child and orphan and forwarding SIGTERM/SIGINT, like tini.

mod eviction;
mod home;
mod journal;
mod process;
mod registry;
mod relocate;
mod run;
mod runtime_api;
mod start_limit;
mod status;
pub mod up;
mod workspace;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

pub use start_limit::{RestartPolicy, StartLimit, Verdict};
pub use workspace::WorkspaceKeeping;

use crate::error::Error;
use crate::http::Client;
use crate::ids::AgentRef;
use crate::sidecar::{Log, Report};

/// The seed's nudge for polecats.
pub const POLECAT_NUDGE: &str = "The container is shutting down. Please commit and push your \
    current changes immediately, then call gt_done. You have 2 minutes.";
/// The seed's nudge for the refinery.
pub const REFINERY_NUDGE: &str = "The container is shutting down. If your review is complete, \
    call gt_done now. Otherwise, your work will be saved and the review will resume after restart.";

/// What the eviction does (see the module doc).
#[derive(Debug, Clone)]
pub struct EvictionOptions {
    /// Everything from SIGTERM to exit.
    pub budget: Duration,
    /// How long the nudged agent may work before its turn is aborted.
    pub nudge_window: Duration,
    /// The nudge per role; a role without one (the Mayor) is not nudged.
    pub nudges: BTreeMap<String, String>,
    /// Run with `sh -c` in the agent's working folder after the agent stopped working.
    pub save_command: Option<String>,
    /// The save command's own limit.
    pub save_timeout: Duration,
    /// How long the runtime may take to exit on SIGTERM before SIGKILL.
    pub stop_grace: Duration,
}

impl Default for EvictionOptions {
    /// A 14 minute budget within the platform's 15, a 10 minute nudge window, the seed's nudges
    /// for polecats and the refinery, no save command (2 minutes when one is given), 10 s grace.
    fn default() -> Self {
        let nudges = [("polecat", POLECAT_NUDGE), ("refinery", REFINERY_NUDGE)]
            .into_iter()
            .map(|(role, text)| (role.to_owned(), text.to_owned()))
            .collect();
        EvictionOptions {
            budget: Duration::from_secs(14 * 60),
            nudge_window: Duration::from_secs(10 * 60),
            nudges,
            save_command: None,
            save_timeout: Duration::from_secs(120),
            stop_grace: Duration::from_secs(10),
        }
    }
}

/// How a supervisor runs.
#[derive(Debug, Clone)]
pub struct SuperviseOptions {
    /// The agent.
    pub agent: AgentRef,
    /// Its role (`mayor`, `polecat`, `refinery`, ...).
    pub role: String,
    /// This container's id (from `boot`, or `up`).
    pub container_id: String,
    /// Where agent homes, sidecar state and the container's token file live (`/tmp`).
    pub root: PathBuf,
    /// The runtime's command line, e.g. `kilo serve --port 0 --hostname 127.0.0.1`.
    pub command: Vec<String>,
    /// The runtime's working folder (a polecat's worktree); default `{home}/work`.
    pub workdir: Option<PathBuf>,
    /// How long the runtime may take to print its listening line.
    pub start_timeout: Duration,
    /// Restart delays and the start limit.
    pub restart: RestartPolicy,
    /// A turn busy longer than this is aborted; `None`: never.
    pub turn_deadline: Option<Duration>,
    /// How often the town is asked whether another container took it over.
    pub fence_check: Duration,
    /// The sidecar's snapshot interval.
    pub snapshot_interval: Duration,
    /// The eviction.
    pub eviction: EvictionOptions,
    /// The dispatch `up` received for this agent (a JSON file), for the [`OnReady`] hook.
    pub dispatch: Option<PathBuf>,
    /// The agent's workspace: restored before the first start, saved as it works.
    pub workspace: WorkspaceKeeping,
}

impl SuperviseOptions {
    /// The defaults of `stasis-client supervise --help` for `agent` running `command`.
    pub fn new(
        agent: AgentRef,
        role: String,
        container_id: String,
        root: PathBuf,
        command: Vec<String>,
    ) -> Self {
        SuperviseOptions {
            agent,
            role,
            container_id,
            root,
            command,
            workdir: None,
            start_timeout: Duration::from_secs(60),
            restart: RestartPolicy::default(),
            turn_deadline: Some(Duration::from_secs(60 * 60)),
            fence_check: Duration::from_secs(5),
            snapshot_interval: Duration::from_secs(5),
            eviction: EvictionOptions::default(),
            dispatch: None,
            workspace: WorkspaceKeeping::default(),
        }
    }

    /// The agent's home: `{root}/agent-home-{agent}`.
    pub fn home(&self) -> PathBuf {
        crate::boot::agent_home(&self.root, self.agent.agent())
    }

    /// The runtime's working folder.
    pub fn workdir(&self) -> PathBuf {
        self.workdir
            .clone()
            .unwrap_or_else(|| self.home().join("work"))
    }
}

/// A runtime that just started and whose events the sidecar follows: what the [`OnReady`] hook
/// gets (to finish a cut turn, deliver the inbox, prompt a new session with the dispatch).
#[derive(Clone)]
pub struct ReadyRuntime {
    /// The agent.
    pub agent: AgentRef,
    /// Its role.
    pub role: String,
    /// This container.
    pub container_id: String,
    /// The runtime's base URL.
    pub url: String,
    /// Its pid (it leads its own process group).
    pub pid: u32,
    /// 0 for the first start, then 1, 2, ... for each restart.
    pub attempt: u32,
    /// The agent's kilo.db.
    pub db: PathBuf,
    /// The dispatch file `up` wrote, when there was one.
    pub dispatch: Option<PathBuf>,
    /// A client bound to this container.
    pub client: Client,
    /// False once this runtime is gone: a follower thread the hook starts ends then.
    pub alive: Arc<AtomicBool>,
    /// The supervisor's log.
    pub log: Log,
}

/// What runs after each start (the resume step). It runs on a thread of its own; an error is
/// logged.
pub type OnReady = Arc<dyn Fn(&ReadyRuntime) -> crate::Result<()> + Send + Sync>;

/// An [`OnReady`] that does nothing.
pub fn no_resume() -> OnReady {
    Arc::new(|_| Ok(()))
}

/// How a supervisor ended.
#[derive(Debug)]
pub enum Outcome {
    /// Evicted (SIGTERM): every phase done, exit 0.
    Evicted,
    /// Evicted, but the budget ran out before everything was done: says what.
    OverBudget(String),
    /// The runtime crashed too often.
    GaveUp(String),
    /// Another container took the town over: the runtime was killed.
    Fenced(Error),
    /// It could not go on.
    Failed(Error),
}

/// Asks a running supervisor to evict (SIGTERM); a second call ends the nudge window at once.
#[derive(Debug, Clone)]
pub struct SignalHandle {
    sender: Sender<Msg>,
}

impl SignalHandle {
    /// Delivers a termination request.
    pub fn terminate(&self, name: &str) {
        let _ = self.sender.send(Msg::Signal(name.to_owned()));
    }
}

/// What the supervisor's loop hears.
enum Msg {
    Signal(String),
    /// Run `run`'s runtime ended.
    Exited {
        run: u32,
        exit: process::Exit,
    },
    /// Run `run`'s sidecar ended.
    SidecarEnded {
        run: u32,
        report: Box<Report>,
    },
}

/// A supervisor, ready to run.
pub struct Supervisor {
    options: SuperviseOptions,
    on_ready: OnReady,
    log: Log,
    sender: Sender<Msg>,
    inbox: Receiver<Msg>,
}

impl Supervisor {
    /// A supervisor with `options`, `on_ready` after each start, its lines to `log`.
    pub fn new(options: SuperviseOptions, on_ready: OnReady, log: Log) -> Self {
        let (sender, inbox) = mpsc::channel();
        Supervisor {
            options,
            on_ready,
            log,
            sender,
            inbox,
        }
    }

    /// A handle that delivers SIGTERM/SIGINT to [`Supervisor::run`].
    pub fn signal_handle(&self) -> SignalHandle {
        SignalHandle {
            sender: self.sender.clone(),
        }
    }

    /// Runs until evicted, fenced, or given up.
    pub fn run(self, client: &Client) -> Outcome {
        run::Loop::new(self, client).run()
    }
}

/// A duration in whole milliseconds, for events.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
