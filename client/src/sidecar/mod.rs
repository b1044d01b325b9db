//! The agent sidecar: runs beside one agent runtime (`kilo serve`) for its whole life, follows
//! its event stream into the agent's stasis log, and keeps its kilo.db snapshot fresh.
//!
//! Four threads:
//! - the reader (`stream.rs`) follows `GET /event`, drops sync twins, keep-alives and repeated
//!   ids, and queues `{type, session_id, data}` events in a bounded queue (`queue.rs`);
//! - the forwarder (`forward/`; `forward/deliver.rs` sends each batch) sends them in stamped
//!   batches (the stamp state survives a restart: `state.rs`), retrying forever while stasis is
//!   unreachable, and reads the conversation back from the runtime (`resync.rs`) where events
//!   went missing;
//! - the snapshot thread (`snapshots.rs`) pushes kilo.db when a turn ends and while it changes;
//! - the caller's thread waits for a stop ([`StopHandle`]), then gives the others the shutdown
//!   budget to flush the queue and push a last snapshot.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use stasis_client::sidecar::{Sidecar, SidecarOptions};
//! use stasis_client::{AgentRef, Client, Config};
//!
//! fn main() -> Result<(), stasis_client::Error> {
//!     // STASIS_URL=http://127.0.0.1:8787, STASIS_TOKEN=<a town token>
//!     let client = Client::new(Config::from_env()?);
//!     let mut options = SidecarOptions::new(
//!         AgentRef::new("demo", "main", "mayor")?,
//!         "http://127.0.0.1:4096".into(),
//!         "/tmp/agent-home-mayor/.local/share/kilo/kilo.db".into(),
//!         "c-0123".into(),
//!         "/tmp/stasis-sidecar-mayor".into(),
//!     );
//!     options.token_file = Some("/tmp/stasis-token-c-0123".into());
//!     let sidecar = Sidecar::new(options, Arc::new(|line: &str| eprintln!("{line}")));
//!     let stop = sidecar.stop_handle(); // stop.stop() from a SIGTERM handler
//!     let report = sidecar.run(&client);
//!     eprintln!("{:?}: {} events forwarded", report.end, report.summary.events_forwarded);
//!     Ok(())
//! }
//! ```

mod batch;
mod control;
mod event;
mod forward;
mod queue;
mod resync;
mod runtime;
mod shrink;
mod snapshots;
mod state;
mod stats;
mod stored;
mod stream;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use control::Control;
use forward::Forwarder;
use queue::{Queue, Resync, ResyncReason};
use runtime::Runtime;
use snapshots::{SnapshotCall, Snapshotter, check_db};
use state::{DirLock, ProducerState, StateFile};
use stats::Stats;
use stream::Reader;

use crate::error::{Error, Result};
use crate::http::Client;
use crate::ids::{AgentRef, check_id};
use crate::retry::RetryPolicy;

pub use queue::Bound;
use queue::Pushed;
pub use resync::{GAP_EVENT, RESYNC_EVENT};
pub use stats::Summary;

/// Where the sidecar's lines go (stderr in the CLI).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// How a sidecar runs.
#[derive(Debug, Clone)]
pub struct SidecarOptions {
    /// The agent whose log and snapshot it feeds.
    pub agent: AgentRef,
    /// The runtime's base URL (`kilo serve`'s).
    pub runtime_url: String,
    /// The agent's kilo.db.
    pub db: PathBuf,
    /// This container's id (from `boot`).
    pub container_id: String,
    /// The container's token file (`boot` writes it; see [`crate::http::credentials`]), shared and
    /// kept fresh; `None` keeps the token in memory only.
    pub token_file: Option<PathBuf>,
    /// Where the stamp state and snapshot copies live.
    pub state_dir: PathBuf,
    /// How long a batch waits for more events after its first.
    pub linger: Duration,
    /// How often the database is checked for changes (and pushed when it changed).
    pub snapshot_interval: Duration,
    /// Time from the stop request to the end of the last snapshot.
    pub shutdown_budget: Duration,
    /// What the queue holds before it drops.
    pub buffer: Bound,
    /// How long the runtime (and its kilo.db) may take to appear.
    pub start_timeout: Duration,
    /// A stream silent this long is dead.
    pub idle_timeout: Duration,
}

impl SidecarOptions {
    /// Options for `agent` with the CLI's defaults (`stasis-client sidecar --help`): a 25 ms
    /// linger, a 5 s snapshot interval, a 30 s shutdown budget, 100,000 events or 64 MiB
    /// buffered, 30 s start and idle timeouts, the token kept in memory only.
    pub fn new(
        agent: AgentRef,
        runtime_url: String,
        db: PathBuf,
        container_id: String,
        state_dir: PathBuf,
    ) -> Self {
        Self {
            agent,
            runtime_url,
            db,
            container_id,
            token_file: None,
            state_dir,
            linger: Duration::from_millis(25),
            snapshot_interval: Duration::from_secs(5),
            shutdown_budget: Duration::from_secs(30),
            buffer: Bound {
                events: 100_000,
                bytes: 64 << 20,
            },
            start_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub enum End {
    /// Stopped by request; everything was forwarded and the last snapshot pushed.
    Stopped,
    /// The budget ran out; says what was not done.
    OverBudget(String),
    /// It could not start or could not go on.
    Failed(Error),
}

/// How a run ended, and its counters.
#[derive(Debug)]
pub struct Report {
    /// The end.
    pub end: End,
    /// The counters, with the end's outcome.
    pub summary: Summary,
}

/// Asks a running sidecar to stop (within its budget); a second call ends the budget.
#[derive(Debug, Clone)]
pub struct StopHandle {
    control: Arc<Control>,
    budget: Duration,
}

impl StopHandle {
    /// Asks for the stop.
    pub fn stop(&self) {
        self.control.request_stop(self.budget);
    }

    /// Asks for the stop within `budget` rather than the options' shutdown budget (a
    /// supervisor's eviction gives the flush what is left of its own).
    pub fn stop_within(&self, budget: Duration) {
        self.control.request_stop(budget);
    }

    /// True once the reader follows the runtime's event stream: from then on nothing the
    /// runtime does is missed.
    pub fn is_following(&self) -> bool {
        self.control.is_following()
    }
}

/// Queues events of the sidecar's owner (a supervisor's `stasis.runtime.*`) among the runtime's
/// own, so that they are forwarded exactly once, in order, and covered by the snapshots'
/// watermark like every other.
#[derive(Debug, Clone)]
pub struct Injector {
    queue: Arc<Queue>,
}

impl Injector {
    /// Queues `{type: kind, session_id, data}`; false when the sidecar no longer takes events
    /// (it is stopping) or the event cannot be encoded.
    pub fn send(&self, kind: &str, session_id: Option<&str>, data: &serde_json::Value) -> bool {
        let Ok(data) = serde_json::value::to_raw_value(data) else {
            return false;
        };
        match event::encode(kind, session_id, Some(&data), now_ms()) {
            Ok((event, _)) => self.queue.push_event(event) == Pushed::Queued,
            Err(_) => false,
        }
    }
}

/// A sidecar, ready to run.
pub struct Sidecar {
    options: SidecarOptions,
    log: Log,
    control: Arc<Control>,
    stats: Arc<Stats>,
    queue: Arc<Queue>,
}

impl Sidecar {
    /// A sidecar with `options`, writing its lines to `log`.
    pub fn new(options: SidecarOptions, log: Log) -> Self {
        Sidecar {
            queue: Arc::new(Queue::new(options.buffer)),
            options,
            log,
            control: Arc::default(),
            stats: Arc::default(),
        }
    }

    /// A handle that stops [`Sidecar::run`] from another thread (a signal handler).
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            control: Arc::clone(&self.control),
            budget: self.options.shutdown_budget,
        }
    }

    /// A handle that queues the owner's own events (see [`Injector`]); events queued before
    /// [`Sidecar::run`] go first.
    pub fn injector(&self) -> Injector {
        Injector {
            queue: Arc::clone(&self.queue),
        }
    }

    /// Runs until stopped or until a failure it cannot recover from.
    pub fn run(self, client: &Client) -> Report {
        let end = match self.start(client) {
            Ok(started) => self.supervise(started),
            Err(error) => End::Failed(error),
        };
        let summary = match &end {
            End::Stopped => self.stats.summary("stopped", None),
            End::OverBudget(what) => self.stats.summary("over_budget", Some(what.clone())),
            End::Failed(error) => self.stats.summary("failed", Some(error.to_string())),
        };
        Report { end, summary }
    }

    fn start(&self, client: &Client) -> Result<Started> {
        let options = &self.options;
        let started_ms = now_ms();
        check_id("container", &options.container_id)?;
        client.bind_container(
            options.agent.town(),
            &options.container_id,
            options.token_file.as_deref(),
        )?;
        let lock = DirLock::acquire(&options.state_dir)?;
        let state_file = StateFile::in_dir(&options.state_dir);
        let saved = state_file.load()?;
        let runtime = Runtime::new(&options.runtime_url)?;
        let started = Instant::now();
        runtime.wait_healthy(options.start_timeout)?;
        (self.log)(&format!("the runtime at {} is up", runtime.base()));
        let left = options.start_timeout.saturating_sub(started.elapsed());
        check_db(&options.db, left)?;
        let first = match &saved {
            Some(state) => Resync {
                reason: ResyncReason::Restart,
                since_ms: state.covered_until_ms,
                gap: None,
                opened: None,
            },
            None => Resync {
                reason: ResyncReason::Start,
                since_ms: started_ms,
                gap: None,
                opened: None,
            },
        };
        let state = saved.unwrap_or_else(|| ProducerState::new(&options.container_id, now_ms()));
        (self.log)(&format!(
            "producer {} at seq {} ({})",
            state.producer_id,
            state.next_seq,
            state_file.path().display()
        ));
        Ok(Started {
            lock,
            state,
            state_file,
            runtime,
            first,
            client: client.clone(),
        })
    }

    fn supervise(&self, started: Started) -> End {
        let threads = match self.spawn(started) {
            Ok(threads) => threads,
            Err(error) => return End::Failed(error),
        };
        self.control.wait_for_stop();
        if let Some(error) = self.control.take_fatal() {
            return End::Failed(error);
        }
        (self.log)("stopping: forwarding what is held, then a last snapshot");
        threads.queue.close();
        let flushed = self.control.wait_flushed();
        // The snapshot thread may already be gone (a failure): then nothing more is pushed.
        let _ = threads.snapshots.send(SnapshotCall::Final);
        let last_snapshot = flushed.then(|| self.control.wait_last_snapshot()).flatten();
        if let Some(error) = self.control.take_fatal() {
            return End::Failed(error);
        }
        let mut undone = Vec::new();
        if !flushed {
            undone.push(format!(
                "{} queued events (and any batch in flight) were not forwarded",
                threads.queue.queued_events()
            ));
        }
        if last_snapshot != Some(true) {
            undone.push("the last snapshot was not pushed".to_owned());
        }
        if undone.is_empty() {
            (self.log)("stopped: every event forwarded, last snapshot stored");
            End::Stopped
        } else {
            End::OverBudget(undone.join("; "))
        }
    }

    fn spawn(&self, started: Started) -> Result<Threads> {
        let options = &self.options;
        let queue = Arc::clone(&self.queue);
        let acked = Arc::new(AtomicU64::new(0));
        let (snapshot_calls, calls) = mpsc::channel();
        let reader = Reader {
            runtime: started.runtime.clone(),
            queue: Arc::clone(&queue),
            control: Arc::clone(&self.control),
            stats: Arc::clone(&self.stats),
            log: Arc::clone(&self.log),
            idle_timeout: options.idle_timeout,
            first: started.first,
        };
        let forwarder = Forwarder {
            client: started.client.clone().with_policy(RetryPolicy::none()),
            agent: options.agent.clone(),
            runtime: started.runtime,
            queue: Arc::clone(&queue),
            control: Arc::clone(&self.control),
            stats: Arc::clone(&self.stats),
            log: Arc::clone(&self.log),
            state: started.state,
            state_file: started.state_file,
            container_id: options.container_id.clone(),
            linger: options.linger,
            acked: Arc::clone(&acked),
            snapshots: snapshot_calls.clone(),
            pending: VecDeque::new(),
            missed_since: None,
        };
        let snapshotter = Snapshotter {
            client: started.client,
            agent: options.agent.clone(),
            db: options.db.clone(),
            work_dir: options.state_dir.clone(),
            interval: options.snapshot_interval,
            acked,
            control: Arc::clone(&self.control),
            stats: Arc::clone(&self.stats),
            log: Arc::clone(&self.log),
            calls,
        };
        let control = &self.control;
        spawn_guarded("reader", control, move || reader.run())?;
        spawn_guarded("forwarder", control, move || forwarder.run())?;
        spawn_guarded("snapshot", control, move || snapshotter.run())?;
        Ok(Threads {
            _lock: started.lock,
            queue,
            snapshots: snapshot_calls,
        })
    }
}

/// What a successful start hands to the threads.
struct Started {
    lock: DirLock,
    state: ProducerState,
    state_file: StateFile,
    runtime: Runtime,
    first: Resync,
    client: Client,
}

/// What the supervisor keeps of the threads.
struct Threads {
    /// Held until the run ends (the threads are never joined: the process ends next).
    _lock: DirLock,
    queue: Arc<Queue>,
    snapshots: mpsc::Sender<SnapshotCall>,
}

/// Starts a thread whose panic ends the run (rather than leaving the sidecar up but idle).
fn spawn_guarded(
    name: &'static str,
    control: &Arc<Control>,
    body: impl FnOnce() + Send + 'static,
) -> Result<()> {
    let control = Arc::clone(control);
    std::thread::Builder::new()
        .name(format!("sidecar-{name}"))
        .spawn(move || {
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
                control.fail(Error::Config(format!(
                    "the sidecar's {name} thread panicked"
                )));
            }
        })
        .map(drop)
        .map_err(|e| Error::io(format!("starting the sidecar's {name} thread"), e))
}

/// Now, in ms since the epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
