//! One operation of the route table as OpenAPI: parameters, request body,
//! answers and error responses.

use super::{
    ErrorBody, Generators,
    model::{MediaType, Operation, Parameter, RequestBody, Response, ResponseHeader},
};
use crate::table::{self, Body, Route};
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

const JSON: &str = "application/json";

/// `op` on `route`; as its `HEAD` twin (no bodies) when `head`.
pub(super) fn describe(
    route: &Route,
    op: &table::Operation,
    generators: &mut Generators,
    head: bool,
) -> Operation {
    let method = if head { "head" } else { op.method.as_str() };
    let strings = generators.answers.subschema_for::<String>();
    let mut parameters: Vec<Parameter> = op
        .query
        .iter()
        .map(|(name, description)| optional(name, "query", description, &strings))
        .collect();
    parameters.extend(
        op.headers
            .iter()
            .map(|(name, description)| optional(name, "header", description, &strings)),
    );
    let mut responses = answers(op, &mut generators.answers, head);
    for (status, codes) in op.errors(route) {
        let response = error_response(status, &codes, &mut generators.answers, head);
        responses.insert(status.to_string(), response);
    }
    Operation {
        operation_id: operation_id(method, route.template),
        summary: op.summary,
        security: route.public.then(Vec::new),
        parameters,
        request_body: if head {
            None
        } else {
            request_body(op.request, &mut generators.requests)
        },
        responses,
    }
}

/// The path's `{name}` parameters: ids (a chunk's is its sha256).
pub(super) fn path_parameters(route: &Route, generator: &mut SchemaGenerator) -> Vec<Parameter> {
    let strings = generator.subschema_for::<String>();
    route
        .param_names()
        .map(|name| Parameter {
            name,
            location: "path",
            required: true,
            description: if name == "sha256" {
                "The chunk's sha256: 64 lowercase hex digits."
            } else {
                "An id: [A-Za-z0-9_.:-]{1,128}, not `.` or `..` (percent-decoded first)."
            },
            schema: strings.clone(),
        })
        .collect()
}

fn optional(
    name: &'static str,
    location: &'static str,
    description: &'static str,
    schema: &Schema,
) -> Parameter {
    Parameter {
        name,
        location,
        required: false,
        description,
        schema: schema.clone(),
    }
}

/// `get_api_towns_town_events` for `GET /api/towns/{town}/events`.
fn operation_id(method: &str, template: &str) -> String {
    let path: Vec<String> = template
        .split(['/', '.', '-'])
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_matches(['{', '}']).to_owned())
        .collect();
    format!("{}_{}", method.to_ascii_lowercase(), path.join("_"))
}

fn request_body(body: Body, generator: &mut SchemaGenerator) -> Option<RequestBody> {
    let (required, media, schema) = match body {
        Body::Empty => return None,
        Body::Json(schema) => (true, JSON, Some(schema(generator))),
        Body::OptionalJson(schema) => (false, JSON, Some(schema(generator))),
        Body::Bytes(media) => (true, media, None),
    };
    Some(RequestBody {
        required,
        content: BTreeMap::from([(media, MediaType { schema })]),
    })
}

/// The operation's answers by status; two bodies of one status (a page or
/// an event stream) are two media types of one response.
fn answers(
    op: &table::Operation,
    generator: &mut SchemaGenerator,
    head: bool,
) -> BTreeMap<String, Response> {
    let strings = generator.subschema_for::<String>();
    let mut responses: BTreeMap<String, Response> = BTreeMap::new();
    for answer in op.replies {
        let response = responses
            .entry(answer.status.to_string())
            .or_insert_with(|| Response {
                description: answer.description.to_owned(),
                headers: BTreeMap::new(),
                content: BTreeMap::new(),
            });
        for header in answer.headers {
            let described = ResponseHeader {
                description: header.description,
                required: true,
                schema: strings.clone(),
            };
            response.headers.insert(header.name, described);
        }
        let content = match answer.body {
            _ if head => None,
            Body::Empty => None,
            Body::Json(schema) | Body::OptionalJson(schema) => {
                Some((JSON, Some(schema(generator))))
            }
            Body::Bytes(media) => Some((media, None)),
        };
        if let Some((media, schema)) = content {
            response.content.insert(media, MediaType { schema });
        }
    }
    responses
}

/// An error response: the shared error body, its code one of `codes`.
fn error_response(
    status: u16,
    codes: &std::collections::BTreeSet<&'static str>,
    generator: &mut SchemaGenerator,
    head: bool,
) -> Response {
    let shared = generator.subschema_for::<ErrorBody>();
    let names: Vec<&str> = codes.iter().copied().collect();
    let mut headers = BTreeMap::new();
    let strings = generator.subschema_for::<String>();
    let mut header = |name: &'static str, description: &'static str, required: bool| {
        let schema = strings.clone();
        headers.insert(
            name,
            ResponseHeader {
                description,
                required,
                schema,
            },
        );
    };
    match status {
        401 => header("WWW-Authenticate", "`Bearer` challenge.", true),
        503 => header("Retry-After", "Seconds to wait.", false),
        _ => {}
    }
    let content = if head {
        BTreeMap::new()
    } else {
        BTreeMap::from([(
            JSON,
            MediaType {
                schema: Some(with_codes(shared, &names)),
            },
        )])
    };
    Response {
        description: format!("Error: {}.", names.join(", ")),
        headers,
        content,
    }
}

/// The shared error schema, its `error.code` narrowed to `codes`:
/// `{"properties": {"error": {"properties": {"code": {"enum": codes}}}}}`
/// beside its `$ref`.
fn with_codes(mut shared: Schema, codes: &[&str]) -> Schema {
    let names = codes
        .iter()
        .map(|c| Value::String((*c).to_owned()))
        .collect();
    let nest = |key: &str, inner: Value| Value::Object(Map::from_iter([(key.to_owned(), inner)]));
    let code = nest("enum", Value::Array(names));
    let error = nest("properties", nest("code", code));
    shared.insert("properties".to_owned(), nest("error", error));
    shared
}
