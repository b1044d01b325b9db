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
//! before the component runs, so the check and the write commit or roll
//! back together (`stasis_domain::fence`).

use super::{
    calls::{self, Call, Instances, Job, Pending, Ran, answered},
    components::Components,
    object_metrics,
    store_state::StoreState,
};
use crate::metrics::Metrics;
use rusqlite::Connection;
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    event_log as log,
    fence::Fence,
    town::{TownCall, TownReply},
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

#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    draining: bool,
    /// The open database while no worker holds it.
    idle_db: Option<SqliteStore>,
}

/// One object on this host.
pub struct Object {
    kind: ObjectKind,
    path: PathBuf,
    durability: Durability,
    queue: Mutex<Queue>,
    last_seq: watch::Sender<u64>,
    metrics: Arc<Metrics>,
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
        }
    }

    /// Subscribes to the newest committed seq, for live tails.
    pub fn watch_last_seq(&self) -> watch::Receiver<u64> {
        self.last_seq.subscribe()
    }

    /// Queues an agent call (fenced by `fence` when it changes the agent)
    /// and waits for its committed answer.
    pub async fn agent(
        self: &Arc<Self>,
        components: &Arc<Components>,
        call: AgentCall,
        env: ObjectEnv,
        fence: Option<Arc<Fence>>,
    ) -> Result<AgentReply, DomainError> {
        let (reply, answer) = oneshot::channel();
        let call = Call::Agent(Pending { call, reply });
        self.enqueue(components, Job { call, env, fence });
        answered(answer.await)
    }

    /// Queues a town call (fenced by `fence` when it changes the town) and
    /// waits for its committed answer.
    pub async fn town(
        self: &Arc<Self>,
        components: &Arc<Components>,
        call: TownCall,
        env: ObjectEnv,
        fence: Option<Arc<Fence>>,
    ) -> Result<TownReply, DomainError> {
        let (reply, answer) = oneshot::channel();
        let call = Call::Town(Pending { call, reply });
        self.enqueue(components, Job { call, env, fence });
        answered(answer.await)
    }

    /// Queues `job`, starting a worker unless one is draining the queue.
    fn enqueue(self: &Arc<Self>, components: &Arc<Components>, job: Job) {
        let start_worker = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.jobs.push(job);
            self.metrics
                .queue_depth
                .get_or_create(&crate::metrics::kind(object_metrics::kind_label(self.kind)))
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

    /// Opens the database and creates its tables. A new object's folders
    /// and file are fsynced into their directories, so that it survives a
    /// power cut as well as its first commit does.
    fn open_db(&self) -> Result<SqliteStore, DomainError> {
        let storage =
            |err: std::io::Error| DomainError::Storage(format!("{}: {err}", self.path.display()));
        let is_new = !self.path.exists();
        if is_new && let Some(dir) = self.path.parent() {
            create_dir_durably(dir).map_err(storage)?;
        }
        let db = SqliteStore::open(&self.path, self.durability)?;
        begin(db.connection())?;
        let migrated = match self.kind {
            ObjectKind::Agent => stasis_domain::agent::migrate(&db),
            ObjectKind::Town => stasis_domain::town::migrate(&db),
        };
        finish(db.connection(), migrated)?;
        if is_new && let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(storage)?;
        }
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
        let began = begin(store.data().connection());
        let mut instances = Instances::default();
        let mut ran = Vec::with_capacity(calls);
        for job in jobs {
            ran.push(match &began {
                Ok(()) => calls::run(components, &mut store, &mut instances, job),
                Err(err) => job.refused(err),
            });
        }
        let commit_started = std::time::Instant::now();
        let committed = began.and_then(|()| finish(store.data().connection(), Ok(())));
        if committed.is_ok() {
            let commit = commit_started.elapsed();
            object_metrics::group_committed(&self.metrics, self.kind, calls, commit);
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
                    object_metrics::agent_answered(&self.metrics, &answer.result);
                    answer.send();
                }
                Ran::Town(mut answer) => {
                    answer.settle(&committed);
                    object_metrics::town_answered(&self.metrics, &self.path, &answer.result);
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

/// Starts the group's write transaction.
fn begin(conn: &Connection) -> Result<(), DomainError> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(sqlite)
}

/// Commits when `outcome` is Ok (this is where the fsync happens), rolls
/// back otherwise or when the commit fails.
fn finish<T>(conn: &Connection, outcome: Result<T, DomainError>) -> Result<T, DomainError> {
    let committed =
        outcome.and_then(|value| conn.execute_batch("COMMIT").map_err(sqlite).map(|()| value));
    if committed.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    committed
}

fn sqlite(err: rusqlite::Error) -> DomainError {
    DomainError::Storage(err.to_string())
}

/// Creates `dir` and any missing parents, then fsyncs each new folder and
/// the existing one above them, so that the new entries are durable.
fn create_dir_durably(dir: &std::path::Path) -> std::io::Result<()> {
    let mut to_sync = Vec::new();
    let mut current = Some(dir);
    while let Some(path) = current {
        to_sync.push(path.to_path_buf());
        if path.exists() {
            break;
        }
        current = path.parent().filter(|p| !p.as_os_str().is_empty());
    }
    std::fs::create_dir_all(dir)?;
    for path in to_sync {
        std::fs::File::open(&path)?.sync_all()?;
    }
    Ok(())
}
