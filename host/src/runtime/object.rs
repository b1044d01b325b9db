//! One object (an agent or a town): its database, its queue, and group
//! commit.
//!
//! Calls on one object are serialised through a queue drained by one
//! blocking worker at a time. The worker takes every call waiting, runs them
//! in one SQLite transaction (each inside its own savepoint, so a refused
//! call rolls back alone), commits once, and only then answers. Concurrent
//! appends to one agent therefore share one fsync, and nothing is
//! acknowledged before it is durable.
//!
//! A call may carry a fence (a container token's write): the host checks it
//! against the object's database itself, inside the call's savepoint and
//! before the component runs ([`super::guests`]), so the check and the
//! write commit or roll back together (`stasis_domain::fence`); the
//! components never see a fence.

use super::{
    components::{Components, StoreState},
    guests::{self, Instances},
};
use crate::metrics::Metrics;
use stasis_domain::{
    DomainError,
    agent::{self, AgentCall, AgentReply, ObjectEnv},
    event_log as log,
    fence::{self, Fence},
    town::{self, TownCall, TownReply},
};
use stasis_sqlite::{Durability, SqliteStore};
use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
};
use tokio::sync::{oneshot, watch};
use wasmtime::Store;

/// Which tables an object's database holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// An agent: log, state, snapshot metadata.
    Agent,
    /// A town: state, registry, town log, deferred dispatches.
    Town,
}

impl ObjectKind {
    /// The kind as the metrics label it.
    pub fn label(self) -> &'static str {
        match self {
            ObjectKind::Agent => "agent",
            ObjectKind::Town => "town",
        }
    }
}

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    draining: bool,
    /// The open database while no worker holds it.
    idle_db: Option<SqliteStore>,
}

/// Closes idle objects to free descriptors; returns how many it closed.
pub type Relief = Arc<dyn Fn() -> usize + Send + Sync>;

/// One object on this host.
pub struct Object {
    kind: ObjectKind,
    path: PathBuf,
    durability: Durability,
    queue: Mutex<Queue>,
    last_seq: watch::Sender<u64>,
    metrics: Arc<Metrics>,
    /// Called when the database cannot be opened for want of descriptors.
    relief: Option<Relief>,
}

impl Object {
    /// An object whose database lives at `path` (opened on first use).
    pub fn new(
        kind: ObjectKind,
        path: PathBuf,
        durability: Durability,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            kind,
            path,
            durability,
            queue: Mutex::new(Queue::default()),
            last_seq: watch::Sender::new(0),
            metrics,
            relief: None,
        }
    }

    /// This object, calling `relief` when its database cannot be opened
    /// for want of descriptors, before trying once more.
    pub fn with_relief(mut self, relief: Relief) -> Self {
        self.relief = Some(relief);
        self
    }

    /// Subscribes to the newest committed seq, for live tails.
    pub fn watch_last_seq(&self) -> watch::Receiver<u64> {
        self.last_seq.subscribe()
    }

    /// Queues a call (an agent's or a town's; fenced by `fence` when it
    /// changes the object) and waits for its committed answer.
    pub(super) async fn call<C, Rep>(
        self: &Arc<Self>,
        components: &Arc<Components>,
        call: C,
        env: ObjectEnv,
        fence: Option<Arc<Fence>>,
    ) -> Result<Rep, DomainError>
    where
        Call: From<Pending<C, Rep>>,
    {
        let (reply, answer) = oneshot::channel();
        let call = Call::from(Pending { call, reply });
        self.enqueue(components, Job { call, env, fence });
        answer.await.map_err(|_| {
            DomainError::Storage("the object's worker stopped before answering".into())
        })?
    }

    /// Queues `job`, starting a worker unless one is draining the queue.
    fn enqueue(self: &Arc<Self>, components: &Arc<Components>, job: Job) {
        let start_worker = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.jobs.push(job);
            self.metrics
                .queue_depth
                .get_or_create(&crate::metrics::kind(self.kind.label()))
                .observe(queue.jobs.len() as f64);
            !std::mem::replace(&mut queue.draining, true)
        };
        if start_worker {
            let object = Arc::clone(self);
            let components = Arc::clone(components);
            tokio::task::spawn_blocking(move || object.run_queued_through_panics(&components));
        }
    }

    /// [`Object::run_queued`], started again after a panic: the group that
    /// panicked has lost its calls (their callers get a 500) and its
    /// database connection, which rolls its transaction back; the calls
    /// queued behind it still run, and the object stays usable.
    fn run_queued_through_panics(&self, components: &Components) {
        while let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.run_queued(components))) {
            tracing::error!(
                object = %self.path.display(),
                panic = crate::panics::message(&*panic),
                "an object's worker panicked; its call group was rolled back"
            );
        }
    }

    /// Runs queued calls, group by group, until the queue is empty.
    fn run_queued(&self, components: &Components) {
        let mut db = self.take_db();
        loop {
            let jobs = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if queue.jobs.is_empty() {
                    queue.draining = false;
                    if let Ok(db) = db {
                        queue.idle_db = Some(db);
                    }
                    return;
                }
                std::mem::take(&mut queue.jobs)
            };
            db = match db {
                Ok(open) => self.run_group(components, open, jobs),
                Err(err) => {
                    for job in jobs {
                        job.refused(&err).send();
                    }
                    self.open_db()
                }
            };
        }
    }

    fn take_db(&self) -> Result<SqliteStore, DomainError> {
        let idle = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .idle_db
            .take();
        match idle {
            Some(db) => Ok(db),
            None => self.open_db(),
        }
    }

    /// Opens the database (created durably when new) and its tables; when
    /// descriptors ran out, closes idle objects and tries once more, so
    /// that the least recently used objects close before a call fails.
    fn open_db(&self) -> Result<SqliteStore, DomainError> {
        match self.try_open_db() {
            Err(err) if out_of_descriptors(&err) => {
                let closed = self.relief.as_ref().map_or(0, |relief| relief());
                tracing::warn!(
                    object = %self.path.display(),
                    %err,
                    closed,
                    "out of descriptors opening an object; closed idle objects and tried again"
                );
                self.try_open_db()
            }
            opened => opened,
        }
    }

    fn try_open_db(&self) -> Result<SqliteStore, DomainError> {
        let db = SqliteStore::open_durably(&self.path, self.durability, |db| match self.kind {
            ObjectKind::Agent => stasis_domain::agent::migrate(db),
            ObjectKind::Town => stasis_domain::town::migrate(db),
        })?;
        if self.kind == ObjectKind::Agent {
            let state = log::state(&db)?;
            self.last_seq.send_replace(state.last_seq);
        }
        Ok(db)
    }

    /// Runs `jobs` in one transaction, commits, then answers each.
    fn run_group(
        &self,
        components: &Components,
        db: SqliteStore,
        jobs: Vec<Job>,
    ) -> Result<SqliteStore, DomainError> {
        let started = std::time::Instant::now();
        let mut store = Store::new(&components.engine, StoreState::new(db));
        let calls = jobs.len();
        let began = store.data().db.begin().map_err(DomainError::from);
        let mut instances = Instances::default();
        let mut ran = Vec::with_capacity(calls);
        for job in jobs {
            ran.push(match &began {
                Ok(()) => job.run(components, &mut store, &mut instances),
                Err(err) => job.refused(err),
            });
        }
        let commit_started = std::time::Instant::now();
        let committed = began.and_then(|()| store.data().db.finish(Ok(())));
        if committed.is_ok() {
            let commit = commit_started.elapsed();
            self.metrics
                .group_committed(self.kind.label(), calls, commit);
        }
        tracing::debug!(
            object = %self.path.display(),
            calls,
            elapsed_us = started.elapsed().as_micros(),
            "call group committed"
        );
        let mut newest = None;
        for ran in ran {
            match ran {
                Ran::Agent(mut answer) => {
                    answer.settle(&committed);
                    if let Ok(AgentReply::Appended(outcome)) = &answer.result {
                        newest = newest.max(Some(outcome.last_seq));
                    }
                    self.metrics.agent_answered(&answer.result);
                    answer.send();
                }
                Ran::Town(mut answer) => {
                    answer.settle(&committed);
                    self.metrics.town_answered(&self.path, &answer.result);
                    answer.send();
                }
            }
        }
        if let Some(seq) = newest {
            self.last_seq.send_if_modified(|current| {
                let grew = seq > *current;
                *current = (*current).max(seq);
                grew
            });
        }
        Ok(store.into_data().db)
    }
}

/// A queued call, with the clock and fence it runs under.
struct Job {
    call: Call,
    env: ObjectEnv,
    fence: Option<Arc<Fence>>,
}

/// A call and where its answer goes, typed by the kind of object: an agent
/// call is answered an agent reply, a town call a town reply.
pub(super) enum Call {
    /// Event-log calls go to the event-log component, the rest to the
    /// state component.
    Agent(Pending<AgentCall, AgentReply>),
    /// Run by the state component's `town` export.
    Town(Pending<TownCall, TownReply>),
}

pub(super) struct Pending<C, Rep> {
    call: C,
    reply: oneshot::Sender<Result<Rep, DomainError>>,
}

/// A call that ran, waiting for its group's commit.
enum Ran {
    Agent(Answer<AgentReply>),
    Town(Answer<TownReply>),
}

struct Answer<Rep> {
    result: Result<Rep, DomainError>,
    reply: oneshot::Sender<Result<Rep, DomainError>>,
}

impl<Rep> Answer<Rep> {
    /// The result as the caller gets it: a failed commit fails every call.
    fn settle(&mut self, committed: &Result<(), DomainError>) {
        if let (Err(err), Ok(_)) = (committed, &self.result) {
            self.result = Err(err.clone());
        }
    }

    fn send(self) {
        let _ = self.reply.send(self.result);
    }
}

impl From<Pending<AgentCall, AgentReply>> for Call {
    fn from(pending: Pending<AgentCall, AgentReply>) -> Self {
        Call::Agent(pending)
    }
}

impl From<Pending<TownCall, TownReply>> for Call {
    fn from(pending: Pending<TownCall, TownReply>) -> Self {
        Call::Town(pending)
    }
}

impl Job {
    /// Runs the call inside its own savepoint, its fence checked first
    /// against the object's database (so the check and the write commit or
    /// roll back together).
    fn run(
        self,
        components: &Components,
        store: &mut Store<StoreState>,
        instances: &mut Instances,
    ) -> Ran {
        let Job { call, env, fence } = self;
        match call {
            Call::Agent(Pending { call, reply }) => {
                let result = in_savepoint(store, instances, |store, instances| {
                    if let Some(fence) = &fence
                        && agent::guards_agent_call(&call)
                    {
                        fence::admit(&store.data().db, fence)?;
                    }
                    guests::run_agent(components, store, instances, &call, &env)
                });
                Ran::Agent(Answer { result, reply })
            }
            Call::Town(Pending { call, reply }) => {
                let result = in_savepoint(store, instances, |store, instances| {
                    if let Some(fence) = &fence
                        && town::guards_town_call(&call)
                    {
                        town::containers::require_current(&store.data().db, fence)?;
                    }
                    guests::run_town(components, store, instances, &call, &env)
                });
                Ran::Town(Answer { result, reply })
            }
        }
    }

    /// The job, not run: its group could not begin.
    fn refused(self, err: &DomainError) -> Ran {
        match self.call {
            Call::Agent(Pending { reply, .. }) => Ran::Agent(Answer {
                result: Err(err.clone()),
                reply,
            }),
            Call::Town(Pending { reply, .. }) => Ran::Town(Answer {
                result: Err(err.clone()),
                reply,
            }),
        }
    }
}

impl Ran {
    fn send(self) {
        match self {
            Ran::Agent(answer) => answer.send(),
            Ran::Town(answer) => answer.send(),
        }
    }
}

/// Runs `run` inside its own savepoint: rolled back when it fails, released
/// otherwise.
fn in_savepoint<Rep>(
    store: &mut Store<StoreState>,
    instances: &mut Instances,
    run: impl FnOnce(&mut Store<StoreState>, &mut Instances) -> Result<Rep, DomainError>,
) -> Result<Rep, DomainError> {
    let savepoint = store.data().db.savepoint()?;
    let result = run(store, instances);
    // A trap leaves an instance unusable; take fresh ones next.
    if matches!(result, Err(DomainError::Storage(_))) {
        *instances = Instances::default();
    }
    savepoint.close(&store.data().db, result.is_ok())?;
    result
}

/// Whether opening failed for want of descriptors: the OS error (`EMFILE`,
/// `ENFILE`) from creating the folder, or SQLite's "unable to open", which
/// it also gives for a full descriptor table.
fn out_of_descriptors(err: &DomainError) -> bool {
    let text = err.to_string();
    ["os error 24", "os error 23", "unable to open database file"]
        .iter()
        .any(|sign| text.contains(sign))
}
