//! The route table: every route the API serves, declared once.
//!
//! [`crate::route::resolve`] finds a request's route here (its path
//! template, the [`Endpoint`] it names, the methods it takes), and
//! [`crate::openapi`] describes the same list as an OpenAPI document (the
//! bodies, statuses, error codes and headers of each operation). A route
//! cannot be served without being described, nor described without being
//! served.

mod agent;
mod errors;
mod fork;
mod history;
mod operator;
pub mod schemas;
mod snapshot;
mod town;
mod workspace;

use crate::endpoint::Endpoint;
use http::Method;
use schemars::{JsonSchema, Schema, SchemaGenerator};

/// One path template and what it serves.
pub struct Route {
    /// The path as `docs/http-api.md` spells it, e.g.
    /// `/api/towns/{town}/events`; a `{name}` segment is a path parameter.
    pub template: &'static str,
    /// Needs no token (probes, the OpenAPI document).
    pub public: bool,
    /// The endpoint a matching path names, built from its parameters.
    pub endpoint: fn(&Params<'_>) -> Endpoint,
    /// The methods it takes, in the order a 405 lists them (`HEAD` is
    /// taken wherever `GET` is).
    pub operations: &'static [Operation],
}

/// One method on a route.
pub struct Operation {
    /// The method.
    pub method: Method,
    /// One line on what it does.
    pub summary: &'static str,
    /// Its request body.
    pub request: Body,
    /// Query parameters it reads: name and meaning.
    pub query: &'static [(&'static str, &'static str)],
    /// Request headers it reads: name and meaning.
    pub headers: &'static [(&'static str, &'static str)],
    /// Its answers other than errors.
    pub replies: &'static [Answer],
    /// Error codes of its own, by status; the ones every operation of its
    /// kind may answer (auth, ids, body limits, fencing) are added by
    /// [`Operation::errors`].
    pub errors: &'static [(u16, &'static [&'static str])],
}

/// A body, of a request or of an answer.
#[derive(Clone, Copy)]
pub enum Body {
    /// None.
    Empty,
    /// JSON of a Rust type's schema.
    Json(SchemaFn),
    /// JSON of a Rust type's schema, or nothing at all.
    OptionalJson(SchemaFn),
    /// Bytes of this media type.
    Bytes(&'static str),
}

/// Builds the schema of a body type.
pub type SchemaFn = fn(&mut SchemaGenerator) -> Schema;

/// The schema of `T` (a reference into the document's components when
/// the generator keeps definitions apart).
pub fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A successful (or not-modified) answer.
pub struct Answer {
    /// Its status.
    pub status: u16,
    /// What it means.
    pub description: &'static str,
    /// Its body.
    pub body: Body,
    /// Headers it always carries.
    pub headers: &'static [Header],
}

/// A response header that matters to a client.
pub struct Header {
    /// Its name.
    pub name: &'static str,
    /// What it says.
    pub description: &'static str,
}

/// The `version` query parameter of the routes that read a kept version.
const VERSION: (&str, &str) = (
    "version",
    "A version (see `/history`) instead of the current one: 404 `version_not_found` when \
     the agent does not keep it.",
);

/// Every route.
pub fn routes() -> impl Iterator<Item = &'static Route> {
    town::ROUTES
        .iter()
        .chain(agent::ROUTES)
        .chain(snapshot::ROUTES)
        .chain(workspace::ROUTES)
        .chain(history::ROUTES)
        .chain(fork::ROUTES)
        .chain(operator::ROUTES)
}

/// A matched path's parameters, by the names its template gives them.
pub struct Params<'a> {
    template: &'static str,
    values: Vec<&'a str>,
}

impl Params<'_> {
    /// The value of `{name}`; empty when the template has no such segment.
    pub fn get(&self, name: &str) -> String {
        let names = segments(self.template).filter_map(param_name);
        names
            .zip(&self.values)
            .find(|(n, _)| *n == name)
            .map(|(_, v)| (*v).to_owned())
            .unwrap_or_default()
    }
}

impl Route {
    /// The route's parameters, when `path` (decoded segments) has its shape.
    pub fn matches<'a>(&self, path: &[&'a str]) -> Option<Params<'a>> {
        let template: Vec<&str> = segments(self.template).collect();
        if template.len() != path.len() {
            return None;
        }
        let mut values = Vec::new();
        for (fixed, given) in template.iter().zip(path) {
            match param_name(fixed) {
                Some(_) => values.push(*given),
                None if fixed == given => {}
                None => return None,
            }
        }
        Some(Params {
            template: self.template,
            values,
        })
    }

    /// The methods it takes, as a 405 lists them.
    pub fn methods(&self) -> impl Iterator<Item = &Method> {
        self.operations.iter().map(|op| &op.method)
    }

    /// The endpoint of a path of this route with placeholder ids.
    pub fn sample(&self) -> Endpoint {
        (self.endpoint)(&Params {
            template: self.template,
            values: Vec::new(),
        })
    }

    /// The names of its path parameters, in order.
    pub fn param_names(&self) -> impl Iterator<Item = &'static str> {
        segments(self.template).filter_map(param_name)
    }
}

/// The route a decoded path has the shape of.
pub fn find<'a>(path: &[&'a str]) -> Option<(&'static Route, Params<'a>)> {
    routes().find_map(|route| route.matches(path).map(|params| (route, params)))
}

fn segments(template: &'static str) -> impl Iterator<Item = &'static str> {
    template.trim_start_matches('/').split('/')
}

fn param_name(segment: &str) -> Option<&str> {
    segment.strip_prefix('{')?.strip_suffix('}')
}

#[cfg(test)]
mod tests;
