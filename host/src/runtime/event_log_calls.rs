//! Event-log calls through the event-log component's typed WIT exports.

use super::{
    bindings::{
        event_log::{EventLogComponent, exports::stasis::objects::event_log as wit},
        from_wit_error,
    },
    guest_state::GuestState,
};
use stasis_domain::{
    DomainError,
    agent::{AgentCall, AgentReply, ObjectEnv},
    event_log as log,
};
use wasmtime::Store;

/// The calls the typed event-log component answers.
pub fn answers(call: &AgentCall) -> bool {
    matches!(call, AgentCall::AppendEvents(_) | AgentCall::ReadEvents(_))
}

/// Sends one call to the event-log component.
pub fn call(
    guest: &EventLogComponent,
    store: &mut Store<GuestState>,
    call: &AgentCall,
    env: &ObjectEnv,
) -> Result<AgentReply, DomainError> {
    let log = guest.stasis_objects_event_log();
    let trap = |err: wasmtime::Error| {
        DomainError::Storage(format!("the event-log component trapped: {err:#}"))
    };
    match call {
        AgentCall::AppendEvents(batch) => {
            let events: Vec<wit::NewEvent> = batch
                .events
                .iter()
                .map(|e| wit::NewEvent {
                    event_type: e.event_type.clone(),
                    session_id: e.session_id.clone(),
                    data: e.data.clone(),
                })
                .collect();
            let producer = batch.producer.as_ref().map(|p| wit::ProducerStamp {
                producer_id: p.producer_id.clone(),
                producer_seq: p.producer_seq,
            });
            let settings = wit::AppendSettings {
                now: env.now_ms,
                max_events: env.max_events,
            };
            let outcome = log
                .call_append(store, &events, producer.as_ref(), settings)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(AgentReply::Appended(log::AppendOutcome {
                first_seq: outcome.first_seq,
                last_seq: outcome.last_seq,
                duplicate: outcome.duplicate,
            }))
        }
        AgentCall::ReadEvents(query) => {
            let query = wit::ReadQuery {
                after: query.after,
                limit: query.limit,
                session_id: query.session_id.clone(),
                event_type: query.event_type.clone(),
            };
            let page = log
                .call_read(store, &query)
                .map_err(trap)?
                .map_err(from_wit_error)?;
            Ok(AgentReply::Events(log::ReadPage {
                events: page
                    .events
                    .into_iter()
                    .map(|e| log::Event {
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
            }))
        }
        other => Err(DomainError::Storage(format!(
            "the event-log component does not answer {other:?}"
        ))),
    }
}
