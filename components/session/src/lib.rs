//! The session component: the domain's agent and town calls, as JSON, over
//! the `sql` import. Every rule lives in `stasis_domain::{agent_state,
//! recall, town}`.

#[allow(missing_docs, unsafe_code, reason = "generated bindings")]
mod bindings {
    wit_bindgen::generate!({
        world: "session-component",
        path: "../../wit",
        with: {
            "stasis:objects/types@0.1.0": stasis_guest::bindings::stasis::objects::types,
            "stasis:objects/sql@0.1.0": stasis_guest::bindings::stasis::objects::sql,
        },
    });
}

use bindings::exports::stasis::objects::{session, town};
use stasis_domain::{
    DomainError,
    agent::{self, AgentCall, ObjectEnv},
    town::{self as domain_town, TownCall, TownEnv},
};
use stasis_guest::{ImportedSql, bindings::stasis::objects::types::Error, run};

struct Session;

fn decode<T: serde::de::DeserializeOwned>(request: &str) -> Result<T, DomainError> {
    serde_json::from_str(request)
        .map_err(|err| DomainError::Storage(format!("the host sent a malformed call: {err}")))
}

fn encode(reply: &impl serde::Serialize) -> Result<String, DomainError> {
    serde_json::to_string(reply).map_err(|err| DomainError::Storage(err.to_string()))
}

impl session::Guest for Session {
    fn call(request: String, now: i64, max_events: u64) -> Result<String, Error> {
        run(|| {
            let call: AgentCall = decode(&request)?;
            let env = ObjectEnv {
                now_ms: now,
                max_events,
            };
            encode(&agent::execute(&ImportedSql, &call, &env)?)
        })
    }
}

impl town::Guest for Session {
    fn call(request: String, now: i64) -> Result<String, Error> {
        run(|| {
            let call: TownCall = decode(&request)?;
            encode(&domain_town::execute(
                &ImportedSql,
                &call,
                &TownEnv { now_ms: now },
            )?)
        })
    }
}

#[allow(unsafe_code, reason = "the export glue wit-bindgen generates")]
mod export {
    use super::Session;
    crate::bindings::export!(Session with_types_in crate::bindings);
}
