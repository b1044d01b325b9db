//! The event-log component: WIT records in, domain calls, WIT records out
//! (mapped by `stasis_guest::conversions`).
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

use bindings::exports::stasis::objects::event_log::Guest;
use stasis_domain::event_log as log;
use stasis_guest::{
    ImportedSql,
    bindings::stasis::objects::types::{
        AppendOutcome, AppendSettings, Error, NewEvent, ProducerStamp, ReadPage, ReadQuery,
    },
    conversions as convert, run,
};

struct EventLog;

impl Guest for EventLog {
    fn append(
        events: Vec<NewEvent>,
        producer: Option<ProducerStamp>,
        settings: AppendSettings,
    ) -> Result<AppendOutcome, Error> {
        let batch = convert::append_batch(events, producer);
        let settings = convert::append_settings(settings);
        let outcome = run(|| log::append(&ImportedSql, &batch, &settings))?;
        Ok(convert::append_outcome(outcome))
    }

    fn read(query: ReadQuery) -> Result<ReadPage, Error> {
        let query = convert::read_query(query);
        let page = run(|| log::read(&ImportedSql, &query))?;
        Ok(convert::read_page(page))
    }
}

#[allow(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod export {
    use super::EventLog;
    crate::bindings::export!(EventLog with_types_in crate::bindings);
}
