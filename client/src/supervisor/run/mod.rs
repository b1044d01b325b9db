//! The supervisor's loop: start a run (runtime, sidecar, status follower), watch it (exit,
//! sidecar end, signals, the turn deadline, fencing, the registry), restart after a crash within
//! the start limit, evict on SIGTERM.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::json;

use super::home::{self, HomeEnv, Hydrated};
use super::journal::Journal;
use super::process::{self, Exit, Runtime, Spawned};
use super::runtime_api::RuntimeApi;
use super::start_limit::{StartLimit, Verdict};
use super::status::{self, Status};
use super::workspace::Keeper;
use super::{Msg, OnReady, Outcome, SuperviseOptions, Supervisor, millis};
use super::{registry, relocate};
use crate::boot::kilo_db_path;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::http::credentials::token_file;
use crate::sidecar::{End, Log, Sidecar, SidecarOptions, StopHandle};

mod ending;
mod periodic;

/// How often the loop looks at the turn deadline, the fence and the registry.
const TICK: Duration = Duration::from_millis(250);
/// How often it looks until the ready hook ran: the cut reply's continuation and the inbox wait
/// on that hook, and a whole tick would add up to 250 ms to a recovery.
const READY_TICK: Duration = Duration::from_millis(10);
/// What the sidecar gets to flush after a crash.
const CRASH_FLUSH: Duration = Duration::from_secs(30);

/// One runtime's life and what watches it.
struct Run {
    id: u32,
    runtime: Runtime,
    stop: StopHandle,
    status: Status,
    api: RuntimeApi,
    alive: Arc<AtomicBool>,
    /// The sidecar ended (its report came).
    sidecar_done: Option<Box<crate::sidecar::Report>>,
    ready_called: bool,
}

/// The loop's state.
pub(super) struct Loop<'c> {
    options: SuperviseOptions,
    on_ready: OnReady,
    log: Log,
    sender: Sender<Msg>,
    inbox: Receiver<Msg>,
    client: &'c Client,
    journal: Arc<Journal>,
    /// The agent's workspace, when one is kept.
    workspace: Option<Arc<Keeper>>,
    next_run: u32,
    session: Option<String>,
    registered: Option<(Option<String>, Option<u16>)>,
    last_fence_check: Instant,
    signals: u32,
    /// When the last spawn was tried (a start that failed ran for no time).
    last_spawn: Instant,
}

impl<'c> Loop<'c> {
    pub(super) fn new(supervisor: Supervisor, client: &'c Client) -> Self {
        let Supervisor {
            options,
            on_ready,
            log,
            sender,
            inbox,
        } = supervisor;
        let journal = Arc::new(Journal::new(
            client.clone(),
            options.agent.clone(),
            &options.container_id,
            Arc::clone(&log),
        ));
        let workspace = Keeper::new(&options, client, &journal, &log);
        Loop {
            options,
            on_ready,
            log,
            sender,
            inbox,
            client,
            journal,
            workspace,
            next_run: 0,
            session: None,
            registered: None,
            last_fence_check: Instant::now(),
            signals: 0,
            last_spawn: Instant::now(),
        }
    }

    pub(super) fn run(mut self) -> Outcome {
        let env = match self.prepare() {
            Ok(env) => env,
            Err(e) if e.is_fenced() => return Outcome::Fenced(e),
            Err(e) => return Outcome::Failed(e),
        };
        let mut limit = StartLimit::new(self.options.restart);
        // A restart spawned while the crashed run's sidecar still flushed.
        let mut next: Option<Spawned> = None;
        loop {
            // A run spawned ahead already took its number.
            let attempt = self.next_run - u32::from(next.is_some());
            let (exit, crashed, started) = match self.start(&env, attempt, next.take()) {
                Ok(mut run) => match self.watch(&mut run) {
                    Watched::Ended(outcome) => return outcome,
                    Watched::Crashed(exit) => {
                        let started = run.runtime.started;
                        (exit, Some(run), started)
                    }
                },
                Err(e) if e.is_fenced() => return Outcome::Fenced(e),
                Err(e) => {
                    self.not_started(&e);
                    (None, None, self.last_spawn)
                }
            };
            let verdict = limit.crashed(started, Instant::now());
            if matches!(verdict, Verdict::Restart { delay, .. } if delay.is_zero()) {
                // kilo's own start is the long part of a restart: it runs while the crashed
                // run's sidecar flushes. The new run's events are recorded after the flush.
                next = self.spawn(&env).map_err(|e| self.not_started(&e)).ok();
            }
            if let Some(mut run) = crashed {
                self.wind_down(&mut run);
            }
            let data = exit_json(exit.as_ref(), attempt, started.elapsed());
            if let Err(e) = self.journal.record("stasis.runtime.exited", None, data) {
                kill_spawned(next.take());
                return Outcome::Fenced(e);
            }
            if self.signals > 0 {
                // A signal came while the crashed run flushed: nothing runs to evict.
                kill_spawned(next.take());
                return self.evicted_while_down("a signal came");
            }
            match verdict {
                Verdict::Restart { delay, attempt } => {
                    let data = json!({ "attempt": attempt, "delay_ms": millis(delay) });
                    if let Err(e) = self.journal.record("stasis.runtime.restarting", None, data) {
                        kill_spawned(next.take());
                        return Outcome::Fenced(e);
                    }
                    if let Some(outcome) = self.pause(delay) {
                        kill_spawned(next.take());
                        return outcome;
                    }
                }
                Verdict::GiveUp { crashes, within } => {
                    let message = format!(
                        "the runtime crashed {crashes} times within {within:?} (the start limit): \
                         giving up"
                    );
                    let data = json!({ "crashes": crashes, "within_ms": millis(within),
                                       "last_exit": exit_json(exit.as_ref(), attempt, started.elapsed()) });
                    let _ = self.journal.record("stasis.runtime.gave_up", None, data);
                    return Outcome::GaveUp(message);
                }
            }
        }
    }

    /// Binds the client to the container, prepares the home, hydrates kilo.db when absent.
    fn prepare(&mut self) -> Result<HomeEnv> {
        let options = &self.options;
        self.client.bind_container(
            options.agent.town(),
            &options.container_id,
            Some(&token_file(&options.root, &options.container_id)),
        )?;
        if !options.role.is_empty() {
            registry::ensure_agent(self.client, &options.agent, &options.role)?;
        }
        let env = home::prepare(&options.home())?;
        if let Some(workspace) = &self.workspace {
            // Before the working folder is created: it may be the workspace.
            workspace.restore_if_empty()?;
        }
        let workdir = options.workdir();
        std::fs::create_dir_all(&workdir)
            .map_err(|e| Error::io(format!("creating {}", workdir.display()), e))?;
        let db = kilo_db_path(&options.root, options.agent.agent());
        let hydrated = home::hydrate_if_empty(self.client, &options.agent, &db)?;
        (self.log)(&match hydrated {
            Hydrated::AlreadyThere => format!("kilo.db is in place at {}", db.display()),
            Hydrated::Pulled(size) => format!("hydrated {} ({size} bytes)", db.display()),
            Hydrated::Fresh => "no snapshot in stasis: the agent starts fresh".to_owned(),
        });
        let moved = relocate::sessions_into(&db, &options.home(), &workdir)?;
        if moved > 0 {
            (self.log)(&format!(
                "{moved} kilo session(s) made in another home (a fork's source) now run in {}",
                workdir.display()
            ));
        }
        Ok(env)
    }

    /// Spawns the runtime (its listening line is awaited by [`Loop::start`]).
    fn spawn(&mut self, env: &HomeEnv) -> Result<Spawned> {
        let id = self.next_run;
        self.next_run += 1;
        let sender = self.sender.clone();
        // Taken before the spawn, so that a spawn that fails counts as a run of no time.
        self.last_spawn = Instant::now();
        process::spawn(
            &self.options.command,
            env,
            &self.options.workdir(),
            &self.log,
            move |exit| {
                let _ = sender.send(Msg::Exited { run: id, exit });
            },
        )
    }

    fn not_started(&self, error: &Error) {
        (self.log)(&format!("the runtime did not start: {error}"));
    }

    /// Starts run `attempt`'s runtime (unless `spawned` already did), then its sidecar and status
    /// follower once it listens.
    fn start(&mut self, env: &HomeEnv, attempt: u32, spawned: Option<Spawned>) -> Result<Run> {
        let spawned = match spawned {
            Some(spawned) => spawned,
            None => self.spawn(env)?,
        };
        let runtime = spawned.listening(self.options.start_timeout)?;
        let attached = self.attach(runtime, attempt);
        if attached.is_err() {
            self.journal.route_through(None);
        }
        attached
    }

    /// The sidecar, the status follower and the registry for a started runtime, which is killed
    /// when one of them fails.
    fn attach(&mut self, runtime: Runtime, id: u32) -> Result<Run> {
        let (stop, status, alive) = match self.attach_parts(&runtime, id) {
            Ok(parts) => parts,
            Err(error) => {
                runtime.kill();
                return Err(error);
            }
        };
        let api = RuntimeApi::new(&runtime.url);
        if let Ok(Some(session)) = api.latest_session() {
            self.session = Some(session);
        }
        let mut run = Run {
            id,
            runtime,
            stop,
            status,
            api,
            alive,
            sidecar_done: None,
            ready_called: false,
        };
        if let Err(error) = self.update_registry(&mut run) {
            run.alive.store(false, Ordering::SeqCst);
            run.stop.stop_within(Duration::ZERO);
            run.runtime.kill();
            return Err(error);
        }
        Ok(run)
    }

    fn attach_parts(
        &mut self,
        runtime: &Runtime,
        id: u32,
    ) -> Result<(StopHandle, Status, Arc<AtomicBool>)> {
        let ready_in = runtime.started.elapsed();
        // Posted directly, before the sidecar starts (its start waits on the runtime's first
        // answers): the log names the new URL as soon as the runtime listens, still ahead of
        // every event the sidecar forwards.
        let spawned_at_ms = process::epoch_millis(runtime.spawned_at);
        let data = json!({ "pid": runtime.pid, "url": runtime.url, "port": runtime.port(),
                           "attempt": id, "ready_ms": millis(ready_in),
                           "spawned_at_ms": spawned_at_ms });
        self.journal.record("stasis.runtime.started", None, data)?;
        let sidecar = Sidecar::new(self.sidecar_options(&runtime.url), Arc::clone(&self.log));
        self.journal.route_through(Some(sidecar.injector()));
        let stop = sidecar.stop_handle();
        let client = self.client.clone();
        let sender = self.sender.clone();
        spawn("sidecar", move || {
            let report = Box::new(sidecar.run(&client));
            let _ = sender.send(Msg::SidecarEnded { run: id, report });
        })?;
        let status = Status::default();
        let alive = Arc::new(AtomicBool::new(true));
        let (url, follower, alive_flag) = (runtime.url.clone(), status.clone(), Arc::clone(&alive));
        spawn("status", move || status::follow(url, follower, alive_flag))?;
        if let Some(keeper) = &self.workspace {
            let (keeper, follower, alive_flag) =
                (Arc::clone(keeper), status.clone(), Arc::clone(&alive));
            spawn("workspace", move || keeper.follow(&follower, &alive_flag))?;
        }
        Ok((stop, status, alive))
    }

    fn sidecar_options(&self, url: &str) -> SidecarOptions {
        let options = &self.options;
        let agent = options.agent.agent();
        let mut sidecar = SidecarOptions::new(
            options.agent.clone(),
            url.to_owned(),
            kilo_db_path(&options.root, agent),
            options.container_id.clone(),
            options.root.join(format!("stasis-sidecar-{agent}")),
        );
        sidecar.token_file = Some(token_file(&options.root, &options.container_id));
        sidecar.snapshot_interval = options.snapshot_interval;
        sidecar
    }

    /// Watches a run until it crashes (answers its exit, when known) or the supervisor ends.
    fn watch(&mut self, run: &mut Run) -> Watched {
        loop {
            let tick = if run.ready_called { TICK } else { READY_TICK };
            match self.inbox.recv_timeout(tick) {
                Ok(Msg::Signal(name)) => {
                    self.signals += 1;
                    (self.log)(&format!("{name} received: evicting"));
                    return Watched::Ended(self.evict(run));
                }
                Ok(Msg::Exited { run: id, exit }) if id == run.id => {
                    (self.log)(&format!("the runtime ended: {exit}"));
                    run.alive.store(false, Ordering::SeqCst);
                    // The group may outlive its leader.
                    run.runtime.kill();
                    return Watched::Crashed(Some(exit));
                }
                Ok(Msg::SidecarEnded { run: id, report }) if id == run.id => {
                    if let Some(outcome) = self.sidecar_ended(run, report) {
                        return Watched::Ended(outcome);
                    }
                }
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Watched::Ended(Outcome::Failed(Error::Config(
                        "the supervisor's channel closed".into(),
                    )));
                }
            }
            if let Err(e) = self.tick(run) {
                if e.is_fenced() {
                    return Watched::Ended(self.fenced(run, e));
                }
                (self.log)(&format!("{e}"));
            }
        }
    }

    /// The sidecar ended by itself: fenced, or unable to go on.
    fn sidecar_ended(
        &mut self,
        run: &mut Run,
        report: Box<crate::sidecar::Report>,
    ) -> Option<Outcome> {
        let End::Failed(error) = &report.end else {
            run.sidecar_done = Some(report);
            return None;
        };
        if error.is_fenced() {
            let End::Failed(error) = report.end else {
                return None;
            };
            return Some(self.fenced(run, error));
        }
        (self.log)(&format!("the sidecar ended: {error}"));
        if matches!(error.root(), Error::Runtime { .. }) {
            // The runtime stopped answering: kill it; its exit is handled as a crash.
            run.sidecar_done = Some(report);
            run.runtime.kill();
            return None;
        }
        run.alive.store(false, Ordering::SeqCst);
        run.runtime.stop(self.options.eviction.stop_grace);
        let End::Failed(error) = report.end else {
            return None;
        };
        Some(Outcome::Failed(error))
    }
}

/// How watching a run ended.
enum Watched {
    /// The runtime ended (its exit, when known): restart or give up.
    Crashed(Option<Exit>),
    /// The supervisor ends.
    Ended(Outcome),
}

fn exit_json(exit: Option<&Exit>, attempt: u32, ran: Duration) -> serde_json::Value {
    json!({
        "pid": exit.map(|e| e.pid),
        "code": exit.and_then(|e| e.code),
        "signal": exit.and_then(|e| e.signal),
        "exited_at_ms": exit.map(|e| e.collected_at_ms),
        "attempt": attempt,
        "ran_ms": millis(ran),
    })
}

/// A restart spawned ahead and then abandoned.
fn kill_spawned(spawned: Option<Spawned>) {
    if let Some(spawned) = spawned {
        spawned.kill();
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("supervisor-{name}"))
        .spawn(body)
        .map(drop)
        .map_err(|e| Error::io(format!("starting the supervisor's {name} thread"), e))
}
