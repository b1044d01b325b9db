//! Appends and reads through the event-log component's typed WIT exports
//! (the hot path; the records are mapped in [`super::conversions`]).

use super::{
    bindings::event_log::EventLogComponent,
    conversions::{self as convert, domain_error},
    guest_state::GuestState,
};
use stasis_domain::{
    DomainError,
    agent::ObjectEnv,
    event_log::{AppendBatch, AppendOutcome, ReadPage, ReadQuery},
};
use wasmtime::Store;

/// Appends `batch` through the component.
pub fn append(
    guest: &EventLogComponent,
    store: &mut Store<GuestState>,
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
        .map_err(trap)?
        .map_err(domain_error)?;
    Ok(convert::append_outcome(outcome))
}

/// Reads a page through the component.
pub fn read(
    guest: &EventLogComponent,
    store: &mut Store<GuestState>,
    query: &ReadQuery,
) -> Result<ReadPage, DomainError> {
    let page = guest
        .stasis_objects_event_log()
        .call_read(store, &convert::read_query(query))
        .map_err(trap)?
        .map_err(domain_error)?;
    Ok(convert::read_page(page))
}

fn trap(err: wasmtime::Error) -> DomainError {
    DomainError::Storage(format!("the event-log component trapped: {err:#}"))
}
