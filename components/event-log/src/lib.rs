//! The event-log component: WIT records in, domain calls, WIT records out.
//! Every rule lives in `stasis_domain::event_log`.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
mod bindings {
    wit_bindgen::generate!({
        world: "event-log-component",
        path: "../../wit",
        with: {
            "stasis:objects/types@0.1.0": stasis_guest::bindings::stasis::objects::types,
            "stasis:objects/sql@0.1.0": stasis_guest::bindings::stasis::objects::sql,
        },
    });
}

use bindings::exports::stasis::objects::event_log::{
    AppendOutcome, AppendSettings, Event, Guest, NewEvent, ProducerStamp, ReadPage, ReadQuery,
};
use stasis_domain::event_log as log;
use stasis_guest::{ImportedSql, bindings::stasis::objects::types::Error, run};

struct EventLog;

impl Guest for EventLog {
    fn append(
        events: Vec<NewEvent>,
        producer: Option<ProducerStamp>,
        settings: AppendSettings,
    ) -> Result<AppendOutcome, Error> {
        let batch = log::AppendBatch {
            events: events
                .into_iter()
                .map(|e| log::NewEvent {
                    event_type: e.event_type,
                    session_id: e.session_id,
                    data: e.data,
                })
                .collect(),
            producer: producer.map(|p| log::ProducerStamp {
                producer_id: p.producer_id,
                producer_seq: p.producer_seq,
            }),
        };
        let settings = log::AppendSettings {
            now_ms: settings.now,
            max_events: settings.max_events,
        };
        let outcome = run(|| log::append(&ImportedSql, &batch, &settings))?;
        Ok(AppendOutcome {
            first_seq: outcome.first_seq,
            last_seq: outcome.last_seq,
            duplicate: outcome.duplicate,
        })
    }

    fn read(query: ReadQuery) -> Result<ReadPage, Error> {
        let query = log::ReadQuery {
            after: query.after,
            limit: query.limit,
            session_id: query.session_id,
            event_type: query.event_type,
        };
        let page = run(|| log::read(&ImportedSql, &query))?;
        Ok(ReadPage {
            events: page
                .events
                .into_iter()
                .map(|e| Event {
                    seq: e.seq,
                    event_type: e.event_type,
                    session_id: e.session_id,
                    data: e.data,
                    created_at: e.created_at_ms,
                })
                .collect(),
            next_after: page.next_after,
            has_more: page.has_more,
            first_seq: page.first_seq,
            last_seq: page.last_seq,
        })
    }
}

#[allow(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod export {
    use super::EventLog;
    crate::bindings::export!(EventLog with_types_in crate::bindings);
}
