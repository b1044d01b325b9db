//! The host's side of the WIT boundary: the guests' imports answered (over
//! the store's database), the component instances of one call group, the
//! typed calls of their exports, and every mapping between the WIT types
//! of `wit/` and the domain's (or the host's storage's) types.
//!
//! Appends and reads go through the event-log component's typed exports;
//! every other call through the state component, in the domain's wire
//! encoding (`stasis_domain::wire`). No fence crosses the boundary: the
//! host checks it before a call runs ([`super::object`]).

use super::{
    bindings::{
        event_log::EventLogComponent,
        imports::stasis::objects::{sql, types},
        state::StateComponent,
    },
    components::{Components, StoreState},
};
use stasis_domain::{
    DomainError, Refusal,
    agent::{AgentCall, AgentReply, ObjectEnv},
    event_log::{AppendBatch, AppendOutcome, Event, ReadPage, ReadQuery},
    sql::{SqlValue, StorageError},
    town::{TownCall, TownReply},
    wire,
};
use stasis_sqlite::ValueRef;
use wasmtime::Store;

impl types::Host for StoreState {}

impl sql::Host for StoreState {
    fn execute(
        &mut self,
        statement: String,
        params: Vec<sql::Value>,
    ) -> Result<Vec<sql::Row>, sql::SqlError> {
        let params: Vec<SqlValue> = params.into_iter().map(sql_value).collect();
        self.db
            .execute_as(&statement, &params, wit_value)
            .map_err(sql_error)
    }
}

/// The component instances of one call group, made on first use.
#[derive(Default)]
pub struct Instances {
    event_log: Option<EventLogComponent>,
    state: Option<StateComponent>,
}

/// Runs an agent call in the component that answers it: appends and reads
/// in the typed event-log component, the rest in the state component.
pub(super) fn run_agent(
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

/// Runs a town call on the state component's `town` export.
pub(super) fn run_town(
    components: &Components,
    store: &mut Store<StoreState>,
    instances: &mut Instances,
    call: &TownCall,
    env: &ObjectEnv,
) -> Result<TownReply, DomainError> {
    let guest = state(components, store, instances)?;
    session_town(guest, store, call, env)
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
            &new_events(batch),
            producer_stamp(batch).as_ref(),
            append_settings(env),
        )
        .map_err(|err| trap("event-log", &err))?
        .map_err(domain_error)?;
    Ok(append_outcome(outcome))
}

/// Reads a page through the event-log component's typed export.
fn log_read(
    guest: &EventLogComponent,
    store: &mut Store<StoreState>,
    query: &ReadQuery,
) -> Result<ReadPage, DomainError> {
    let page = guest
        .stasis_objects_event_log()
        .call_read(store, &read_query(query))
        .map_err(|err| trap("event-log", &err))?
        .map_err(domain_error)?;
    Ok(read_page(page))
}

/// Runs an agent call on the state component's `session` export, in the
/// domain's wire encoding (no fence travels: it was checked here).
fn session_agent(
    guest: &StateComponent,
    store: &mut Store<StoreState>,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let request = wire::encode_agent_request(call, None, &env.retention)?;
    let reply = guest
        .stasis_objects_session()
        .call_call(&mut *store, &request, env.now_ms, env.max_events)
        .map_err(|err| trap("state", &err))?
        .map_err(domain_error)?;
    wire::decode(&reply)
}

/// A town call in the wire encoding, through the `town` export.
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

// Mappings between WIT and domain types.

/// An append's events, as the event-log export takes them.
fn new_events(batch: &AppendBatch) -> Vec<types::NewEvent> {
    batch
        .events
        .iter()
        .map(|e| types::NewEvent {
            event_type: e.event_type.clone(),
            session_id: e.session_id.clone(),
            data: e.data.clone(),
        })
        .collect()
}

/// An append's producer stamp, as the event-log export takes it.
fn producer_stamp(batch: &AppendBatch) -> Option<types::ProducerStamp> {
    batch.producer.as_ref().map(|p| types::ProducerStamp {
        producer_id: p.producer_id.clone(),
        producer_seq: p.producer_seq,
    })
}

/// The settings of an append.
fn append_settings(env: &ObjectEnv) -> types::AppendSettings {
    types::AppendSettings {
        now: env.now_ms,
        max_events: env.max_events,
    }
}

/// The event-log export's append outcome.
fn append_outcome(outcome: types::AppendOutcome) -> AppendOutcome {
    AppendOutcome {
        first_seq: outcome.first_seq,
        last_seq: outcome.last_seq,
        duplicate: outcome.duplicate,
    }
}

/// A read query, as the event-log export takes it.
fn read_query(query: &ReadQuery) -> types::ReadQuery {
    types::ReadQuery {
        after: query.after,
        limit: query.limit,
        session_id: query.session_id.clone(),
        event_type: query.event_type.clone(),
    }
}

/// The event-log export's page of events.
fn read_page(page: types::ReadPage) -> ReadPage {
    ReadPage {
        events: page
            .events
            .into_iter()
            .map(|e| Event {
                seq: e.seq,
                event_type: e.event_type,
                session_id: e.session_id,
                data: e.data,
                created_at_ms: e.created_at,
            })
            .collect(),
        next_after: page.next_after,
        has_more: page.has_more,
        first_seq: page.first_seq,
        last_seq: page.last_seq,
    }
}

/// The WIT error variant as the domain's error.
fn domain_error(err: types::Error) -> DomainError {
    use types::Error as E;
    let refusal = |r: types::Refusal| Refusal::new(r.code, r.message);
    match err {
        E::InvalidInput(r) => DomainError::InvalidInput(refusal(r)),
        E::NotFound(r) => DomainError::NotFound(refusal(r)),
        E::Conflict(r) => DomainError::Conflict(refusal(r)),
        E::PreconditionFailed(r) => DomainError::PreconditionFailed(refusal(r)),
        E::TooLarge(l) => DomainError::TooLarge {
            code: l.code,
            message: l.message,
            limit: l.limit,
        },
        E::CursorExpired(first_seq) => DomainError::CursorExpired { first_seq },
        E::Unavailable(r) => DomainError::Unavailable(refusal(r)),
        E::ChunksMissing(missing) => DomainError::ChunksMissing { missing },
        E::Storage(m) => DomainError::Storage(m),
    }
}

/// A `sql` import parameter as the domain's SQL value.
fn sql_value(value: sql::Value) -> SqlValue {
    match value {
        sql::Value::Null => SqlValue::Null,
        sql::Value::Integer(v) => SqlValue::Integer(v),
        sql::Value::Real(v) => SqlValue::Real(v),
        sql::Value::Text(v) => SqlValue::Text(v),
        sql::Value::Blob(v) => SqlValue::Blob(v),
    }
}

/// A column SQLite returned, as the `sql` import answers it.
fn wit_value(value: ValueRef<'_>) -> sql::Value {
    match value {
        ValueRef::Null => sql::Value::Null,
        ValueRef::Integer(v) => sql::Value::Integer(v),
        ValueRef::Real(v) => sql::Value::Real(v),
        ValueRef::Text(v) => sql::Value::Text(stasis_sqlite::text_from(v)),
        ValueRef::Blob(v) => sql::Value::Blob(v.to_vec()),
    }
}

/// A storage error as the `sql` import answers it.
fn sql_error(err: StorageError) -> sql::SqlError {
    use StorageError as E;
    match err {
        E::ConstraintViolation(m) => sql::SqlError::ConstraintViolation(m),
        E::TooBig(m) => sql::SqlError::TooBig(m),
        E::InvalidStatement(m) => sql::SqlError::InvalidStatement(m),
        E::Io(m) | E::Shape(m) => sql::SqlError::Io(m),
    }
}
