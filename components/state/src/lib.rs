//! The state component: the domain's agent and town calls, in the
//! domain's wire encoding (`stasis_domain::wire`), over the `sql` import.
//! Every rule lives in `stasis_domain::{agent_state, recall, snapshot,
//! town}`.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
mod bindings {
    wit_bindgen::generate!({
        world: "state-component",
        path: "../../wit",
        with: {
            "stasis:objects/types@0.1.0": stasis_guest::bindings::stasis::objects::types,
            "stasis:objects/sql@0.1.0": stasis_guest::bindings::stasis::objects::sql,
        },
    });
}

use bindings::exports::stasis::objects::{session, town};
use stasis_domain::{agent::ObjectEnv, town::TownEnv, wire};
use stasis_guest::{ImportedSql, bindings::stasis::objects::types::Error, run};

struct Session;

impl session::Guest for Session {
    fn call(request: String, now: i64, max_events: u64) -> Result<String, Error> {
        run(|| {
            let env = ObjectEnv {
                now_ms: now,
                max_events,
                retention: Default::default(),
            };
            wire::encode(&wire::answer_agent(&ImportedSql, &request, &env)?)
        })
    }
}

impl town::Guest for Session {
    fn call(request: String, now: i64) -> Result<String, Error> {
        run(|| {
            let reply = wire::answer_town(&ImportedSql, &request, &TownEnv { now_ms: now })?;
            wire::encode(&reply)
        })
    }
}

#[allow(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod export {
    use super::Session;
    crate::bindings::export!(Session with_types_in crate::bindings);
}
