//! One call on an object: its typed job, the component that runs it inside
//! its own savepoint (its fence checked first), and its answer, which waits
//! for the group's commit. Appends and reads go through the event-log
//! component's typed exports (records mapped in [`super::conversions`]);
//! every other call through the state component, in the domain's wire
//! encoding (`stasis_domain::wire`).
//!
//! The host checks a fence against the object's database itself, inside
//! the call's savepoint and before the component runs, so the check and the
//! write commit or roll back together (`stasis_domain::fence`); the
//! components never see a fence.

use super::{
    bindings::{event_log::EventLogComponent, state::StateComponent},
    components::Components,
    conversions::{self as convert, domain_error},
    store_state::StoreState,
};
use rusqlite::Connection;
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    event_log::{AppendBatch, AppendOutcome, ReadPage, ReadQuery},
    fence::{self, Fence},
    town::{self, TownCall, TownReply},
    wire,
};
use std::sync::Arc;
use tokio::sync::oneshot;
use wasmtime::Store;

/// A queued call, with the clock and fence it runs under.
pub(super) struct Job {
    pub call: Call,
    pub env: ObjectEnv,
    pub fence: Option<Arc<Fence>>,
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
    pub call: C,
    pub reply: oneshot::Sender<Result<Rep, DomainError>>,
}

/// A call that ran, waiting for its group's commit.
pub(super) enum Ran {
    Agent(Answer<AgentReply>),
    Town(Answer<TownReply>),
}

pub(super) struct Answer<Rep> {
    pub result: Result<Rep, DomainError>,
    reply: oneshot::Sender<Result<Rep, DomainError>>,
}

impl<Rep> Answer<Rep> {
    /// The result as the caller gets it: a failed commit fails every call.
    pub(super) fn settle(&mut self, committed: &Result<(), DomainError>) {
        if let (Err(err), Ok(_)) = (committed, &self.result) {
            self.result = Err(err.clone());
        }
    }

    pub(super) fn send(self) {
        let _ = self.reply.send(self.result);
    }
}

/// The component instances of one call group, made on first use.
#[derive(Default)]
pub(super) struct Instances {
    event_log: Option<EventLogComponent>,
    state: Option<StateComponent>,
}

/// Runs one call inside its own savepoint, its fence checked first
/// against the object's database (so the check and the write commit or
/// roll back together; the components never see a fence).
pub(super) fn run(
    components: &Components,
    store: &mut Store<StoreState>,
    instances: &mut Instances,
    job: Job,
) -> Ran {
    let Job { call, env, fence } = job;
    match call {
        Call::Agent(Pending { call, reply }) => {
            let result = in_savepoint(store, instances, |store, instances| {
                if let Some(fence) = &fence
                    && fence::guards_agent_call(&call)
                {
                    fence::admit(&store.data().db, fence)?;
                }
                run_agent(components, store, instances, &call, &env)
            });
            Ran::Agent(Answer { result, reply })
        }
        Call::Town(Pending { call, reply }) => {
            let result = in_savepoint(store, instances, |store, instances| {
                if let Some(fence) = &fence
                    && fence::guards_town_call(&call)
                {
                    town::containers::require_current(&store.data().db, fence)?;
                }
                let guest = state(components, store, instances)?;
                session_town(guest, store, &call, &env)
            });
            Ran::Town(Answer { result, reply })
        }
    }
}

impl Job {
    /// The job, not run: its group could not begin.
    pub(super) fn refused(self, err: &DomainError) -> Ran {
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
    pub(super) fn send(self) {
        match self {
            Ran::Agent(answer) => answer.send(),
            Ran::Town(answer) => answer.send(),
        }
    }
}

/// The answer of a queued call, or why the worker never gave one.
pub(super) fn answered<Rep>(
    answer: Result<Result<Rep, DomainError>, oneshot::error::RecvError>,
) -> Result<Rep, DomainError> {
    answer
        .map_err(|_| DomainError::Storage("the object's worker stopped before answering".into()))?
}

/// Runs `run` inside its own savepoint: rolled back when it fails, released
/// otherwise.
fn in_savepoint<Rep>(
    store: &mut Store<StoreState>,
    instances: &mut Instances,
    run: impl FnOnce(&mut Store<StoreState>, &mut Instances) -> Result<Rep, DomainError>,
) -> Result<Rep, DomainError> {
    let savepoint = Savepoint::open(store.data().connection())?;
    let result = run(store, instances);
    if result.is_err() {
        // A trap leaves an instance unusable; take fresh ones next.
        if matches!(result, Err(DomainError::Storage(_))) {
            *instances = Instances::default();
        }
        savepoint.rollback(store.data().connection())?;
    } else {
        savepoint.release(store.data().connection())?;
    }
    result
}

/// Runs an agent call in the component that answers it: appends and reads
/// in the typed event-log component, the rest in the state component.
fn run_agent(
    components: &Components,
    store: &mut Store<StoreState>,
    instances: &mut Instances,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    match call {
        AgentCall::AppendEvents(batch) => {
            let guest = event_log(components, store, instances)?;
            log_append(guest, store, batch, env).map(AgentReply::Appended)
        }
        AgentCall::ReadEvents(query) => {
            let guest = event_log(components, store, instances)?;
            log_read(guest, store, query).map(AgentReply::Events)
        }
        other => {
            let guest = state(components, store, instances)?;
            session_agent(guest, store, other, env)
        }
    }
}

/// Appends `batch` through the event-log component's typed export (the
/// hot path).
fn log_append(
    guest: &EventLogComponent,
    store: &mut Store<StoreState>,
    batch: &AppendBatch,
    env: &ObjectEnv,
) -> Result<AppendOutcome, DomainError> {
    let outcome = guest
        .stasis_objects_event_log()
        .call_append(
            store,
            &convert::new_events(batch),
            convert::producer_stamp(batch).as_ref(),
            convert::append_settings(env),
        )
        .map_err(|err| trap("event-log", &err))?
        .map_err(domain_error)?;
    Ok(convert::append_outcome(outcome))
}

/// Reads a page through the event-log component's typed export.
fn log_read(
    guest: &EventLogComponent,
    store: &mut Store<StoreState>,
    query: &ReadQuery,
) -> Result<ReadPage, DomainError> {
    let page = guest
        .stasis_objects_event_log()
        .call_read(store, &convert::read_query(query))
        .map_err(|err| trap("event-log", &err))?
        .map_err(domain_error)?;
    Ok(convert::read_page(page))
}

/// Runs an agent call on the state component's `session` export, in the
/// domain's wire encoding (no fence travels: it was checked here).
fn session_agent(
    guest: &StateComponent,
    store: &mut Store<StoreState>,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let request = wire::encode_request(call, None)?;
    let reply = guest
        .stasis_objects_session()
        .call_call(&mut *store, &request, env.now_ms, env.max_events)
        .map_err(|err| trap("state", &err))?
        .map_err(domain_error)?;
    wire::decode(&reply)
}

/// Runs a town call on the state component's `town` export.
fn session_town(
    guest: &StateComponent,
    store: &mut Store<StoreState>,
    call: &TownCall,
    env: &ObjectEnv,
) -> Result<TownReply, DomainError> {
    let request = wire::encode_request(call, None)?;
    let reply = guest
        .stasis_objects_town()
        .call_call(&mut *store, &request, env.now_ms)
        .map_err(|err| trap("state", &err))?
        .map_err(domain_error)?;
    wire::decode(&reply)
}

fn trap(component: &str, err: &wasmtime::Error) -> DomainError {
    DomainError::Storage(format!("the {component} component trapped: {err:#}"))
}

fn event_log<'a>(
    components: &Components,
    store: &mut Store<StoreState>,
    instances: &'a mut Instances,
) -> Result<&'a EventLogComponent, DomainError> {
    instance(&mut instances.event_log, "event-log", || {
        components.event_log.instantiate(&mut *store)
    })
}

fn state<'a>(
    components: &Components,
    store: &mut Store<StoreState>,
    instances: &'a mut Instances,
) -> Result<&'a StateComponent, DomainError> {
    instance(&mut instances.state, "state", || {
        components.state.instantiate(&mut *store)
    })
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
