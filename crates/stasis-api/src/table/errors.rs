//! The error codes an operation may answer: its own, and those every
//! operation of its kind shares (auth, ids, bodies, fencing, the server).

use super::{Body, Operation, Route};
use http::Method;
use std::collections::{BTreeMap, BTreeSet};

/// Codes by status.
pub type Codes = BTreeMap<u16, BTreeSet<&'static str>>;

impl Operation {
    /// Every error code this operation may answer on `route`, by status.
    pub fn errors(&self, route: &Route) -> Codes {
        let mut codes = Codes::new();
        let mut add = |status: u16, names: &[&'static str]| {
            codes.entry(status).or_default().extend(names);
        };
        // Any request: a `Content-Length` that is no integer, a body past
        // the operation's limit or arriving too slowly (host), a failure
        // of ours, a full host or an edge without its secret.
        add(400, &["invalid_request"]);
        add(408, &["body_too_slow"]);
        add(413, &["body_too_large"]);
        add(500, &["internal_error"]);
        add(503, &["over_capacity", "not_configured"]);
        if route.param_names().next().is_some() {
            add(400, &["invalid_id"]);
        }
        if !route.public {
            add(401, &["unauthorized"]);
            add(403, &["forbidden"]);
        }
        if !route.public && route.sample().is_fenced(&self.method) {
            add(409, &["container_fenced", "container_not_current"]);
        }
        let takes_body = matches!(self.method, Method::PUT | Method::POST);
        match self.request {
            Body::Json(_) | Body::OptionalJson(_) if takes_body => {
                add(400, &["invalid_json"]);
                add(415, &["unsupported_media_type"]);
            }
            Body::Bytes(_) if takes_body => add(415, &["unsupported_media_type"]),
            _ => {}
        }
        for (status, names) in self.errors {
            add(*status, names);
        }
        codes
    }
}
