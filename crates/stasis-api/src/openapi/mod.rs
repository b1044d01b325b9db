//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the route
//! table ([`crate::table`]) and the body types' JSON Schemas (schemars,
//! draft 2020-12). Answer schemas describe how the types serialise and sit
//! in `components.schemas`; request schemas describe what deserialises and
//! are inlined (a type may take more than it writes, e.g. omitted fields).

mod model;
mod operation;

use crate::table::schemas::ErrorBody;

use crate::table;
use model::{Components, Document, Info, PathItem, SecurityScheme};
use schemars::{Schema, SchemaGenerator, generate::SchemaSettings, transform::RecursiveTransform};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Where answer schemas are kept, as a JSON pointer.
const DEFINITIONS: &str = "/components/schemas";

/// The document as JSON, built once per process.
pub fn document() -> &'static [u8] {
    static DOCUMENT: OnceLock<Vec<u8>> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        // Serialising our own types cannot fail; an empty object would
        // fail every client's check loudly rather than crash the server.
        serde_json::to_vec(&build()).unwrap_or_else(|_| b"{}".to_vec())
    })
}

/// The schema generators: answers (kept apart, referenced) and requests
/// (inlined).
pub(crate) struct Generators {
    pub(crate) answers: SchemaGenerator,
    pub(crate) requests: SchemaGenerator,
}

fn build() -> Document {
    let mut generators = Generators {
        answers: generator(true),
        requests: generator(false),
    };
    let mut paths = BTreeMap::new();
    for route in table::routes() {
        let mut operations = BTreeMap::new();
        for op in route.operations {
            let described = operation::describe(route, op, &mut generators, false);
            operations.insert(op.method.as_str().to_ascii_lowercase(), described);
            if op.method == http::Method::GET {
                let head = operation::describe(route, op, &mut generators, true);
                operations.insert("head".to_owned(), head);
            }
        }
        let parameters = operation::path_parameters(route, &mut generators.answers);
        paths.insert(
            route.template,
            PathItem {
                parameters,
                operations,
            },
        );
    }
    Document {
        openapi: "3.1.0",
        info: Info {
            title: "stasis",
            version: env!("CARGO_PKG_VERSION"),
            description: DESCRIPTION,
        },
        paths,
        components: Components {
            schemas: generators.answers.take_definitions(true),
            security_schemes: BTreeMap::from([(
                "bearer",
                SecurityScheme {
                    kind: "http",
                    scheme: "bearer",
                    bearer_format: "JWT",
                },
            )]),
        },
        security: vec![BTreeMap::from([("bearer", [])])],
    }
}

/// Answers: how the types serialise, kept in the components, and exact (a
/// field no type declares is drift). Requests: what deserialises, inlined.
fn generator(answers: bool) -> SchemaGenerator {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.definitions_path = DEFINITIONS.into();
        settings.meta_schema = None;
        settings.inline_subschemas = !answers;
    });
    if answers {
        settings
            .for_serialize()
            .with_transform(RecursiveTransform(close_object))
            .into_generator()
    } else {
        settings.for_deserialize().into_generator()
    }
}

/// An object schema that lists its properties takes no others.
fn close_object(schema: &mut Schema) {
    if schema.get("properties").is_some() && schema.get("additionalProperties").is_none() {
        schema.insert("additionalProperties".to_owned(), false.into());
    }
}

const DESCRIPTION: &str = "Durable state for AI agents in ephemeral containers. \
Generated from the server's own route table and body types; docs/http-api.md is the prose. \
Every error is `{\"error\": {\"code\", \"message\", ...}}` (components.schemas.ErrorBody); each \
operation lists its codes per status. A path no route has answers 404 `not_found`, a method a \
route does not take 405 `method_not_allowed` with `Allow`; both with the same error body. \
`HEAD` is taken wherever `GET` is: the same status and headers, no body.";

#[cfg(test)]
mod tests;
