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
    bindings::{event_log::EventLogComponent, session::SessionComponent},
    calls::{ObjectAnswer, ObjectCall},
    components::Components,
    event_log_calls,
    guest_state::GuestState,
    kv_folder::KvFolder,
    object_metrics, session_calls,
};
use crate::metrics::Metrics;
use rusqlite::Connection;
use stasis_domain::{
    DomainError,
    agent::{AgentReply, ObjectEnv},
    event_log as log,
    fence::{self, Fence},
    town,
};
use stasis_sqlite::{Durability, SqliteStore};
use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::PathBuf,
    sync::{Arc, Mutex, PoisonError},
};
use tokio::sync::{oneshot, watch};
use wasmtime::Store;

/// A queued call and where its answer goes.
struct Job {
    call: ObjectCall,
    env: ObjectEnv,
    fence: Option<Arc<Fence>>,
    reply: oneshot::Sender<Result<ObjectAnswer, DomainError>>,
}

/// The component instances of one call group, made on first use.
#[derive(Default)]
struct Instances {
    event_log: Option<EventLogComponent>,
    session: Option<SessionComponent>,
}

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
    kv: Arc<KvFolder>,
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
        kv: Arc<KvFolder>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            kind,
            path,
            durability,
            kv,
            queue: Mutex::new(Queue::default()),
            last_seq: watch::Sender::new(0),
            metrics,
        }
    }

    /// Subscribes to the newest committed seq, for live tails.
    pub fn watch_last_seq(&self) -> watch::Receiver<u64> {
        self.last_seq.subscribe()
    }

    /// Queues `call` (fenced by `fence` when it changes the object) and
    /// waits for its committed answer.
    pub async fn call(
        self: &Arc<Self>,
        components: &Arc<Components>,
        call: ObjectCall,
        env: ObjectEnv,
        fence: Option<Arc<Fence>>,
    ) -> Result<ObjectAnswer, DomainError> {
        let (reply, answer) = oneshot::channel();
        let start_worker = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.jobs.push(Job {
                call,
                env,
                fence,
                reply,
            });
            self.metrics
                .queue_depth
                .get_or_create(&crate::metrics::kind(object_metrics::kind_label(self.kind)))
                .observe(queue.jobs.len() as f64);
            !std::mem::replace(&mut queue.draining, true)
        };
        if start_worker {
            let object = Arc::clone(self);
            let components = Arc::clone(components);
            tokio::task::spawn_blocking(move || object.drain_through_panics(&components));
        }
        answer.await.map_err(|_| {
            DomainError::Storage("the object's worker stopped before answering".into())
        })?
    }

    /// [`Object::drain`], started again after a panic: the group that
    /// panicked has lost its calls (their callers get a 500) and its
    /// database connection, which rolls its transaction back; the calls
    /// queued behind it still run, and the object stays usable.
    fn drain_through_panics(&self, components: &Components) {
        while let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.drain(components))) {
            tracing::error!(
                object = %self.path.display(),
                panic = crate::panics::message(&*panic),
                "an object's worker panicked; its call group was rolled back"
            );
        }
    }

    /// Runs queued calls, group by group, until the queue is empty.
    fn drain(&self, components: &Components) {
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
                        let _ = job.reply.send(Err(err.clone()));
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
        mut jobs: Vec<Job>,
    ) -> Result<SqliteStore, DomainError> {
        let started = std::time::Instant::now();
        let mut store = Store::new(
            &components.engine,
            GuestState::new(db, Arc::clone(&self.kv)),
        );
        let mut results = Vec::with_capacity(jobs.len());
        let began = begin(store.data().connection());
        let mut instances = Instances::default();
        for job in jobs.iter_mut() {
            let result = match &began {
                Ok(()) => self.run_one(components, &mut store, &mut instances, job),
                Err(err) => Err(err.clone()),
            };
            results.push(result);
        }
        let commit_started = std::time::Instant::now();
        let committed = began.and_then(|()| finish(store.data().connection(), Ok(())));
        if committed.is_ok() {
            let commit = commit_started.elapsed();
            object_metrics::group_committed(&self.metrics, self.kind, jobs.len(), commit);
        }
        // KV deletes wait for the commit: until then the metadata that the
        // database would return to after a crash may still name those keys.
        let deletes = store.data_mut().take_deferred_deletes();
        if committed.is_ok() {
            self.kv.delete_all(&deletes);
        }
        tracing::debug!(
            object = %self.path.display(),
            calls = jobs.len(),
            elapsed_us = started.elapsed().as_micros(),
            "call group committed"
        );
        let mut newest = None;
        for (job, result) in jobs.into_iter().zip(results) {
            let result = match (&committed, result) {
                (Err(err), Ok(_)) => Err(err.clone()),
                (_, result) => result,
            };
            if let Ok(ObjectAnswer::Agent(AgentReply::Appended(outcome))) = &result {
                newest = newest.max(Some(outcome.last_seq));
            }
            object_metrics::answered(&self.metrics, &self.path, &result);
            let _ = job.reply.send(result);
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

    /// Runs one call inside its own savepoint.
    fn run_one(
        &self,
        components: &Components,
        store: &mut Store<GuestState>,
        instances: &mut Instances,
        job: &mut Job,
    ) -> Result<ObjectAnswer, DomainError> {
        let savepoint = Savepoint::open(store.data().connection())?;
        let deletes_mark = store.data().deferred_mark();
        let result = match check_fence(&store.data().db, job) {
            Err(refused) => Err(refused),
            Ok(()) => self.run_component(components, store, instances, job),
        };
        if result.is_err() {
            // A trap leaves an instance unusable; take fresh ones next.
            if matches!(result, Err(DomainError::Storage(_))) {
                *instances = Instances::default();
            }
            store.data_mut().forget_deletes_since(deletes_mark);
            savepoint.rollback(store.data().connection())?;
        } else {
            savepoint.release(store.data().connection())?;
        }
        result
    }

    /// Runs one call in the component that answers it.
    fn run_component(
        &self,
        components: &Components,
        store: &mut Store<GuestState>,
        instances: &mut Instances,
        job: &mut Job,
    ) -> Result<ObjectAnswer, DomainError> {
        match &mut job.call {
            ObjectCall::Agent(call) if event_log_calls::answers(call) => {
                let guest = instance(&mut instances.event_log, "event-log", || {
                    components.event_log.instantiate(&mut *store)
                })?;
                event_log_calls::call(guest, store, call, &job.env).map(ObjectAnswer::Agent)
            }
            ObjectCall::Agent(call) => {
                let guest = instance(&mut instances.session, "session", || {
                    components.session.instantiate(&mut *store)
                })?;
                session_calls::agent(guest, store, call, &job.env).map(ObjectAnswer::Agent)
            }
            ObjectCall::Town(call) => {
                let guest = instance(&mut instances.session, "session", || {
                    components.session.instantiate(&mut *store)
                })?;
                session_calls::town(guest, store, call, &job.env).map(ObjectAnswer::Town)
            }
        }
    }
}

/// Checks a fenced call against the object's database: an agent call that
/// changes the agent must not be older than the newest container that
/// wrote to it; a town call that changes the town needs its container to
/// hold the town. Snapshot steps are agent calls, so the sagas' writes are
/// checked here too.
fn check_fence(db: &stasis_sqlite::SqliteStore, job: &Job) -> Result<(), DomainError> {
    let Some(fence) = &job.fence else {
        return Ok(());
    };
    match &job.call {
        ObjectCall::Agent(call) if fence::guards_agent_call(call) => fence::admit(db, fence),
        ObjectCall::Town(call) if fence::guards_town_call(call) => {
            town::containers::require_current(db, fence)
        }
        _ => Ok(()),
    }
}

/// The group's instance of a component, instantiated on first use.
fn instance<'a, T>(
    slot: &'a mut Option<T>,
    name: &str,
    make: impl FnOnce() -> wasmtime::Result<T>,
) -> Result<&'a T, DomainError> {
    if slot.is_none() {
        *slot = Some(make().map_err(|err| {
            DomainError::Storage(format!("instantiating the {name} component: {err:#}"))
        })?);
    }
    slot.as_ref()
        .ok_or_else(|| DomainError::Storage(format!("the {name} instance vanished")))
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

/// One call's savepoint inside the group's transaction.
struct Savepoint;

impl Savepoint {
    fn open(conn: &Connection) -> Result<Self, DomainError> {
        conn.execute_batch("SAVEPOINT call").map_err(sqlite)?;
        Ok(Self)
    }

    fn release(self, conn: &Connection) -> Result<(), DomainError> {
        conn.execute_batch("RELEASE call").map_err(sqlite)
    }

    fn rollback(self, conn: &Connection) -> Result<(), DomainError> {
        conn.execute_batch("ROLLBACK TO call; RELEASE call")
            .map_err(sqlite)
    }
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
