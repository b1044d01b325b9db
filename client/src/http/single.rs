//! A request sent once: for a write the server does not make idempotent,
//! where a retry after a lost answer would apply it twice (a restore).

use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Client, check_status, parse_json, read_body, transport};
use crate::error::{Error, Result};
use crate::retry::Attempt;

impl Client {
    /// `POST path` with a JSON body, one attempt (a lapsed token is still
    /// refreshed first), answering the JSON body of a 2xx.
    pub fn post_json_single<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
        deadline: Option<Instant>,
    ) -> Result<T> {
        let what = format!("POST {path}");
        let bytes = serde_json::to_vec(body).map_err(|e| Error::Protocol {
            what: what.clone(),
            detail: format!("the request body does not encode: {e}"),
        })?;
        let once = || -> std::result::Result<Vec<u8>, Attempt> {
            let request = self
                .prepare(self.agent.post(self.config.url(path)), deadline)?
                .header("Content-Type", "application/json");
            let response = request.send(&bytes[..]).map_err(|e| transport(&what, e))?;
            read_body(&what, check_status(&what, response)?)
        };
        match once() {
            Ok(bytes) => parse_json(&what, &bytes),
            Err(Attempt::Retry { error, .. } | Attempt::Fail(error)) => Err(*error),
        }
    }
}
