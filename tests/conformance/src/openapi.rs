//! Every response the suite receives, checked against the server's own
//! `/openapi.json` (fetched once per run): the status must be one the
//! operation declares, the headers it declares required must be there, and
//! a JSON body must validate against the declared schema (JSON Schema
//! 2020-12, the `jsonschema` crate). A path no route has, or a method its
//! route does not take, must answer the shared error body. A mismatch
//! fails the case, naming the operation, the status and the schema path.
//!
//! The shared client layer calls [`check`] ([`crate::call`], [`crate::raw`],
//! [`crate::snapshot`]) and [`check_stream`] (a live tail's head).

use crate::{Reply, Value, target};
use jsonschema::Validator;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The document and the validators built from it so far, by pointer.
struct Contract {
    document: Value,
    templates: Vec<String>,
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

fn contract() -> &'static Contract {
    static CONTRACT: OnceLock<Contract> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        let url = format!("{}/openapi.json", target().base);
        let mut response = crate::client()
            .get(&url)
            .call()
            .unwrap_or_else(|e| panic!("GET {url} failed: {e}"));
        assert_eq!(response.status().as_u16(), 200, "GET {url}");
        let document: Value = response
            .body_mut()
            .with_config()
            .limit(16 * 1024 * 1024)
            .read_json()
            .unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"));
        assert_eq!(document["openapi"], "3.1.0", "GET {url}");
        let templates = document["paths"]
            .as_object()
            .unwrap_or_else(|| panic!("{url} has no paths"))
            .keys()
            .cloned()
            .collect();
        Contract {
            document,
            templates,
            validators: Mutex::new(HashMap::new()),
        }
    })
}

/// Checks `reply` to `method path` (the path may carry a query).
///
/// # Panics
/// When the reply breaks the document.
pub fn check(method: &str, path: &str, reply: &Reply) {
    check_with(method, path, reply, !method.eq_ignore_ascii_case("HEAD"));
}

/// Checks a reply's status and headers only (its body was read raw).
///
/// # Panics
/// When the reply breaks the document.
pub fn check_head(method: &str, path: &str, reply: &Reply) {
    check_with(method, path, reply, false);
}

fn check_with(method: &str, path: &str, reply: &Reply, with_body: bool) {
    if crate::on_edge() && reply.status == 501 {
        // workerd refuses a method it has no name for before the worker
        // runs (README, "Known limits"): not stasis's answer.
        return;
    }
    let path = served_path(path);
    let path = path.as_str();
    let contract = contract();
    let head_only = !with_body;
    let Some((template, operation)) = contract.operation(method, path) else {
        let what = format!("{method} {path} (no operation)");
        assert!(
            reply.status >= 400,
            "openapi: {what} answered {}, not an error",
            reply.status
        );
        if !head_only {
            contract.check_body(&what, "/components/schemas/ErrorBody", reply);
        }
        return;
    };
    let what = format!(
        "{} {template} -> {}",
        method.to_ascii_uppercase(),
        reply.status
    );
    let status = reply.status.to_string();
    let Some(response) = operation["responses"].get(&status) else {
        panic!(
            "openapi: {what}: status {status} is not declared for this operation; body {:?}",
            reply.text()
        );
    };
    if let Some(headers) = response["headers"].as_object() {
        for (name, header) in headers {
            let required = header["required"].as_bool().unwrap_or(false);
            assert!(
                !required || reply.header(name).is_some(),
                "openapi: {what}: declared header {name} is missing; got {:?}",
                reply.headers
            );
        }
    }
    if head_only || reply.body.is_empty() && response.get("content").is_none() {
        return;
    }
    let media = media_type(reply);
    let Some(content) = response["content"].get(&media) else {
        panic!(
            "openapi: {what}: content type {media:?} is not declared ({}); body {:?}",
            response["content"],
            reply.text()
        );
    };
    if content.get("schema").is_some() {
        let pointer = format!(
            "/paths/{}/{}/responses/{status}/content/{}/schema",
            escape(&template),
            method.to_ascii_lowercase(),
            escape(&media)
        );
        contract.check_body(&what, &pointer, reply);
    }
}

/// Checks the head of a live tail: a declared status and content type.
///
/// # Panics
/// When the head breaks the document.
pub fn check_stream(path: &str, status: u16, content_type: &str) {
    let contract = contract();
    let Some((template, operation)) = contract.operation("GET", path) else {
        panic!("openapi: GET {path}: a live tail of no operation");
    };
    let media = content_type.split(';').next().unwrap_or_default().trim();
    let declared = &operation["responses"][status.to_string()]["content"][media];
    assert!(
        declared.is_object(),
        "openapi: GET {template} -> {status}: content type {media:?} is not declared"
    );
}

impl Contract {
    /// The template and the operation of `method path`, if any.
    fn operation(&self, method: &str, path: &str) -> Option<(String, &Value)> {
        let path = path.split(['?', '#']).next().unwrap_or_default();
        let trimmed = path.strip_prefix('/').unwrap_or(path);
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let segments: Vec<String> = trimmed
            .split('/')
            .map(|s| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8()
                    .map_or_else(|_| s.to_owned(), |d| d.into_owned())
            })
            .collect();
        let template = self.templates.iter().find(|t| fits(t, &segments))?;
        let operation = self.document["paths"][template].get(method.to_ascii_lowercase())?;
        Some((template.clone(), operation))
    }

    /// Validates the reply's body, as JSON, against the schema at `pointer`.
    fn check_body(&self, what: &str, pointer: &str, reply: &Reply) {
        let body: Value = serde_json::from_slice(&reply.body).unwrap_or_else(|e| {
            panic!(
                "openapi: {what}: the body is not JSON ({e}): {:?}",
                reply.text()
            )
        });
        let validator = self.validator(pointer);
        let errors: Vec<String> = validator
            .iter_errors(&body)
            .take(5)
            .map(|e| format!("at {} (schema {}): {e}", e.instance_path(), e.schema_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "openapi: {what}: the body breaks {pointer}: {}; body {body}",
            errors.join("; ")
        );
    }

    /// A validator for the schema at `pointer`: the document itself with a
    /// `$ref` at its root (its own fields are no schema keywords).
    fn validator(&self, pointer: &str) -> Arc<Validator> {
        let mut cache = self.validators.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = cache.get(pointer) {
            return Arc::clone(found);
        }
        let mut root = self.document.clone();
        let fragment = pointer.replace('{', "%7B").replace('}', "%7D");
        root["$ref"] = Value::String(format!("#{fragment}"));
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&root)
            .unwrap_or_else(|e| panic!("openapi: the schema at {pointer} does not compile: {e}"));
        let validator = Arc::new(validator);
        cache.insert(pointer.to_owned(), Arc::clone(&validator));
        validator
    }
}

/// The path the server sees: on the edge the URL standard has already
/// resolved `.` and `..` segments (`%2e` counts as a dot) before the worker
/// runs; the host takes the path as sent.
fn served_path(path: &str) -> String {
    if !crate::on_edge() {
        return path.to_owned();
    }
    let (path, query) = path.split_once('?').map_or((path, ""), |(p, q)| (p, q));
    let is_dots =
        |segment: &str, dots: &str| segment.to_ascii_lowercase().replace("%2e", ".") == dots;
    let mut kept: Vec<&str> = Vec::new();
    let raw: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (index, segment) in raw.iter().enumerate() {
        let last = index + 1 == raw.len();
        if is_dots(segment, "..") {
            kept.pop();
        } else if !is_dots(segment, ".") {
            kept.push(segment);
            continue;
        }
        if last {
            kept.push("");
        }
    }
    let resolved = format!("/{}", kept.join("/"));
    if query.is_empty() {
        resolved
    } else {
        format!("{resolved}?{query}")
    }
}

/// Whether decoded `segments` have the shape of `template`.
fn fits(template: &str, segments: &[String]) -> bool {
    let fixed: Vec<&str> = template.trim_start_matches('/').split('/').collect();
    fixed.len() == segments.len()
        && fixed
            .iter()
            .zip(segments)
            .all(|(f, s)| f.starts_with('{') || f == s)
}

/// The reply's media type, without parameters.
fn media_type(reply: &Reply) -> String {
    let value = reply.header("content-type").unwrap_or_default();
    value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A JSON pointer's escaping of one token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
