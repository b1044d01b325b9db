//! The supervisor's loop: start a run (runtime, sidecar, status follower), watch it (exit,
//! sidecar end, signals, the turn deadline, fencing, the registry), restart after a crash within
//! the start limit, evict on SIGTERM.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde_json::json;

use super::eviction::{self, Eviction};
use super::home::{self, HomeEnv, Hydrated};
use super::journal::Journal;
use super::process::{self, Exit, Runtime};
use super::registry;
use super::runtime_api::RuntimeApi;
use super::start_limit::{StartLimit, Verdict};
use super::status::{self, Status};
use super::{Msg, OnReady, Outcome, ReadyRuntime, SuperviseOptions, Supervisor, millis};
use crate::boot::kilo_db_path;
use crate::error::{Error, Result};
use crate::http::Client;
use crate::http::credentials::token_file;
use crate::ids::town_path;
use crate::sidecar::{End, Log, Sidecar, SidecarOptions, StopHandle};
use crate::town::{RegisteredAgent, TownState};

/// How often the loop looks at the turn deadline, the fence and the registry.
const TICK: Duration = Duration::from_millis(250);
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
    journal: Journal,
    next_run: u32,
    session: Option<String>,
    registered: Option<(Option<String>, Option<u16>)>,
    last_fence_check: Instant,
    signals: u32,
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
        let journal = Journal::new(
            client.clone(),
            options.agent.clone(),
            &options.container_id,
            Arc::clone(&log),
        );
        Loop {
            options,
            on_ready,
            log,
            sender,
            inbox,
            client,
            journal,
            next_run: 0,
            session: None,
            registered: None,
            last_fence_check: Instant::now(),
            signals: 0,
        }
    }

    pub(super) fn run(mut self) -> Outcome {
        let env = match self.prepare() {
            Ok(env) => env,
            Err(e) if e.is_fenced() => return Outcome::Fenced(e),
            Err(e) => return Outcome::Failed(e),
        };
        let mut limit = StartLimit::new(self.options.restart);
        loop {
            let attempt = self.next_run;
            let started = Instant::now();
            let exit = match self.start(&env, attempt) {
                Ok(mut run) => match self.watch(&mut run) {
                    Watched::Ended(outcome) => return outcome,
                    Watched::Crashed(exit) => exit,
                },
                Err(e) if e.is_fenced() => return Outcome::Fenced(e),
                Err(e) => {
                    (self.log)(&format!("the runtime did not start: {e}"));
                    None
                }
            };
            let data = exit_json(exit.as_ref(), attempt, started.elapsed());
            if let Err(e) = self.journal.record("stasis.runtime.exited", None, data) {
                return Outcome::Fenced(e);
            }
            match limit.crashed(started, Instant::now()) {
                Verdict::Restart { delay, attempt } => {
                    let data = json!({ "attempt": attempt, "delay_ms": millis(delay) });
                    if let Err(e) = self.journal.record("stasis.runtime.restarting", None, data) {
                        return Outcome::Fenced(e);
                    }
                    if let Some(outcome) = self.pause(delay) {
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
        Ok(env)
    }

    /// Starts the runtime, the sidecar and the status follower.
    fn start(&mut self, env: &HomeEnv, attempt: u32) -> Result<Run> {
        let id = self.next_run;
        self.next_run += 1;
        let sender = self.sender.clone();
        let runtime = process::start(
            &self.options.command,
            env,
            &self.options.workdir(),
            self.options.start_timeout,
            &self.log,
            move |exit| {
                let _ = sender.send(Msg::Exited { run: id, exit });
            },
        )?;
        let attached = self.attach(runtime, id, attempt);
        if attached.is_err() {
            self.journal.route_through(None);
        }
        attached
    }

    /// The sidecar, the status follower and the registry for a started runtime, which is killed
    /// when one of them fails.
    fn attach(&mut self, runtime: Runtime, id: u32, attempt: u32) -> Result<Run> {
        let (stop, status, alive) = match self.attach_parts(&runtime, id, attempt) {
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
        attempt: u32,
    ) -> Result<(StopHandle, Status, Arc<AtomicBool>)> {
        let ready_in = runtime.started.elapsed();
        let sidecar = Sidecar::new(self.sidecar_options(&runtime.url), Arc::clone(&self.log));
        self.journal.route_through(Some(sidecar.injector()));
        let stop = sidecar.stop_handle();
        let data = json!({ "pid": runtime.pid, "url": runtime.url, "port": runtime.port(),
                           "attempt": attempt, "ready_ms": millis(ready_in) });
        self.journal.record("stasis.runtime.started", None, data)?;
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
            match self.inbox.recv_timeout(TICK) {
                Ok(Msg::Signal(name)) => {
                    self.signals += 1;
                    (self.log)(&format!("{name} received: evicting"));
                    return Watched::Ended(self.evict(run));
                }
                Ok(Msg::Exited { run: id, exit }) if id == run.id => {
                    (self.log)(&format!("the runtime ended: {exit}"));
                    self.wind_down(run);
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

    /// The periodic checks: fencing, the turn deadline, the registry, the ready hook.
    fn tick(&mut self, run: &mut Run) -> Result<()> {
        if self.last_fence_check.elapsed() >= self.options.fence_check {
            self.last_fence_check = Instant::now();
            self.check_fence()?;
        }
        if let Some(deadline) = self.options.turn_deadline {
            for (session, busy_for) in run.status.take_overdue(deadline, Instant::now()) {
                let aborted = run.api.abort(&session);
                let data = json!({ "session_id": session, "busy_ms": millis(busy_for),
                                   "deadline_ms": millis(deadline), "aborted": aborted.is_ok(),
                                   "error": aborted.err().map(|e| e.to_string()) });
                self.journal
                    .record("stasis.turn.aborted", Some(&session), data)?;
            }
        }
        if let Some(session) = run.status.last_session() {
            self.session = Some(session);
        }
        self.update_registry(run)?;
        if !run.ready_called && run.stop.is_following() && run.status.is_connected() {
            run.ready_called = true;
            self.call_on_ready(run)?;
        }
        Ok(())
    }

    fn check_fence(&self) -> Result<()> {
        let town = self.options.agent.town();
        let deadline = Instant::now() + Duration::from_secs(10);
        let state: TownState = self.client.get_json(&town_path(town)?, Some(deadline))?;
        match state.current_container_id {
            Some(current) if !current.is_empty() && current != self.options.container_id => {
                Err(Error::Superseded {
                    ours: self.options.container_id.clone(),
                    current,
                })
            }
            _ => Ok(()),
        }
    }

    fn update_registry(&mut self, run: &mut Run) -> Result<()> {
        let now = (self.session.clone(), run.runtime.port());
        if self.registered.as_ref() == Some(&now) {
            return Ok(());
        }
        let entry = RegisteredAgent {
            agent_id: self.options.agent.agent().to_owned(),
            rig_id: self.options.agent.rig().to_owned(),
            role: self.options.role.clone(),
            session_id: now.0.clone(),
            port: now.1,
        };
        let town = self.options.agent.town();
        match registry::record(
            self.client,
            town,
            &self.options.container_id,
            &self.options.root,
            &entry,
        ) {
            Ok(()) => {
                (self.log)(&format!(
                    "registry: session {:?}, port {:?}",
                    entry.session_id, entry.port
                ));
                self.registered = Some(now);
                Ok(())
            }
            Err(e) if e.is_fenced() => Err(e),
            Err(e) => {
                (self.log)(&format!("could not record the agent in the registry: {e}"));
                Ok(())
            }
        }
    }

    fn call_on_ready(&self, run: &Run) -> Result<()> {
        let options = &self.options;
        let ready = ReadyRuntime {
            agent: options.agent.clone(),
            role: options.role.clone(),
            container_id: options.container_id.clone(),
            url: run.runtime.url.clone(),
            pid: run.runtime.pid,
            attempt: run.id,
            db: kilo_db_path(&options.root, options.agent.agent()),
            dispatch: options.dispatch.clone(),
            client: self.client.clone(),
            alive: Arc::clone(&run.alive),
            log: Arc::clone(&self.log),
        };
        let hook = Arc::clone(&self.on_ready);
        spawn("on-ready", move || {
            if let Err(e) = hook(&ready) {
                (ready.log)(&format!("the resume step failed: {e}"));
            }
        })
    }

    /// After a crash: the sidecar flushes what it holds (the exit event queued last) and ends.
    fn wind_down(&mut self, run: &mut Run) {
        run.alive.store(false, Ordering::SeqCst);
        // The group may outlive its leader.
        run.runtime.kill();
        if run.sidecar_done.is_none() {
            run.stop.stop_within(CRASH_FLUSH);
            let deadline = Instant::now() + CRASH_FLUSH + Duration::from_secs(5);
            self.await_sidecar(run, deadline);
        }
        self.journal.route_through(None);
    }

    /// Waits for the run's sidecar to end (other messages are dropped: the run is over).
    fn await_sidecar(&mut self, run: &mut Run, deadline: Instant) {
        while run.sidecar_done.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(Msg::SidecarEnded { run: id, report }) if id == run.id => {
                    run.sidecar_done = Some(report);
                }
                Ok(Msg::Signal(_)) => self.signals += 1,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }

    /// A pause before a restart; a signal meanwhile ends the supervisor (nothing runs to evict).
    fn pause(&mut self, delay: Duration) -> Option<Outcome> {
        let deadline = Instant::now() + delay;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            match self.inbox.recv_timeout(left) {
                Ok(Msg::Signal(name)) => {
                    (self.log)(&format!("{name} received while no runtime runs: exiting"));
                    let _ = crate::town::evict(
                        self.client,
                        self.options.agent.town(),
                        &self.options.container_id,
                        "sigterm",
                        Some(Instant::now() + Duration::from_secs(10)),
                    );
                    return Some(Outcome::Evicted);
                }
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }

    /// Fenced: the runtime dies at once; nothing more is written.
    fn fenced(&self, run: &Run, error: Error) -> Outcome {
        run.alive.store(false, Ordering::SeqCst);
        run.runtime.kill();
        run.stop.stop_within(Duration::ZERO);
        // Reaped before the supervisor exits, so that no zombie outlives it.
        run.runtime.wait_gone(Duration::from_secs(5));
        (self.log)(&format!(
            "fenced: {error}; killed the runtime (pid {})",
            run.runtime.pid
        ));
        Outcome::Fenced(error)
    }

    fn evict(&mut self, run: &mut Run) -> Outcome {
        let eviction = Eviction {
            options: &self.options,
            client: self.client,
            journal: &self.journal,
            runtime: &run.runtime,
            api: &run.api,
            status: &run.status,
            session: self.session.clone(),
            log: &self.log,
        };
        let (inbox, sender) = (&self.inbox, self.sender.clone());
        // Anything but a signal goes back in the queue, for after the phases.
        let mut second_signal = || match inbox.try_recv() {
            Ok(Msg::Signal(_)) => true,
            Ok(other) => {
                let _ = sender.send(other);
                false
            }
            Err(_) => false,
        };
        let phases = eviction::run(&eviction, &mut second_signal);
        let deadline = phases.deadline;
        if let Some(error) = phases.fenced {
            return self.fenced(run, error);
        }
        run.alive.store(false, Ordering::SeqCst);
        let left = deadline.saturating_duration_since(Instant::now());
        run.stop.stop_within(left.max(Duration::from_secs(1)));
        self.await_sidecar(run, deadline + Duration::from_secs(5));
        match run.sidecar_done.take().map(|report| report.end) {
            Some(End::Stopped) => Outcome::Evicted,
            Some(End::OverBudget(what)) => Outcome::OverBudget(what),
            Some(End::Failed(error)) if error.is_fenced() => Outcome::Fenced(error),
            Some(End::Failed(error)) => Outcome::Failed(error),
            None => Outcome::OverBudget("the sidecar did not end within the budget".into()),
        }
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
        "attempt": attempt,
        "ran_ms": millis(ran),
    })
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("supervisor-{name}"))
        .spawn(body)
        .map(drop)
        .map_err(|e| Error::io(format!("starting the supervisor's {name} thread"), e))
}
