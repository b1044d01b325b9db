//! What every answer must be: documented for the request's route and
//! method, from the check the request broke first (the contract's order),
//! in the contract's error shape with a code its status lists, a success
//! body that parses, and never a 500.

use super::catalog::{Answer, CODES, GENERIC};
use super::request::{Request, Stage};
use crate::snapshot::sha256_hex;
use crate::{Reply, Value};

/// The methods the fuzz sends that workerd knows by name (it answers 501
/// to any other before the worker sees it).
const KNOWN_TO_WORKERD: &[&str] = &[
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND",
];

/// The problems with `reply` as an answer to `request`; empty when none.
pub fn check(request: &Request, reply: &Reply, on_edge: bool) -> Vec<String> {
    let mut problems = Vec::new();
    let status = reply.status;
    if on_edge && status == 501 && !KNOWN_TO_WORKERD.contains(&request.method.as_str()) {
        // workerd refuses a method it has no name for before the worker
        // runs (README, "Known limits").
        return problems;
    }
    if status >= 500 && status != 503 {
        problems.push(format!("a {status}: {}", excerpt(&reply.body)));
    }
    let code = if status >= 400 && request.method != "HEAD" {
        error_code(reply, &mut problems)
    } else {
        None
    };
    let dot_on_edge = on_edge && request.stages.contains(&Stage::DotId);
    if !documented(request, status, code.as_deref(), dot_on_edge) {
        problems.push(format!(
            "{status} {} is not documented for {} on {:?}",
            code.as_deref().unwrap_or(""),
            request.method,
            request.route
        ));
    }
    if let Some(stage) = request.first_stage()
        && !dot_on_edge
        && !stage.allows(status, on_edge)
    {
        problems.push(format!("the {stage:?} check should have refused it"));
    }
    if status < 300 && request.method != "HEAD" {
        success_body(request, reply, &mut problems);
    }
    problems
}

/// True when the contract documents `status` (with `code`) here.
fn documented(request: &Request, status: u16, code: Option<&str>, dot_on_edge: bool) -> bool {
    let matches = |(s, c): &Answer| *s == status && code.is_none_or(|code| code == *c);
    if dot_on_edge {
        // The URL standard resolved the dot segment: another route answered.
        return status < 400 || CODES.iter().any(matches);
    }
    let method = request.method.as_str();
    let own: &[Answer] = if request.shape_kept && request.route.methods().contains(&method) {
        request.route.answers(method)
    } else {
        &[]
    };
    GENERIC.iter().chain(own).any(matches)
}

/// The error's code, after checking the contract's shape and the extra
/// field its status carries.
fn error_code(reply: &Reply, problems: &mut Vec<String>) -> Option<String> {
    let content_type = reply.header("content-type").unwrap_or_default();
    let body: Option<Value> = serde_json::from_slice(&reply.body).ok();
    let error = body.as_ref().and_then(|b| b.get("error"));
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_str);
    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str);
    if !content_type.starts_with("application/json")
        || code.is_none()
        || message.is_none_or(str::is_empty)
    {
        problems.push(format!(
            "not the contract's error shape ({content_type:?}): {}",
            excerpt(&reply.body)
        ));
        return None;
    }
    let field = |name: &str| error.and_then(|e| e.get(name));
    let extra = match reply.status {
        413 => field("limit").and_then(Value::as_u64).map(drop),
        410 => field("first_seq").and_then(Value::as_u64).map(drop),
        405 => field("allowed")
            .and_then(Value::as_array)
            .and(reply.header("allow"))
            .map(drop),
        503 => field("retry_after")
            .and_then(Value::as_u64)
            .and(reply.header("retry-after"))
            .map(drop),
        _ => Some(()),
    };
    if extra.is_none() {
        problems.push(format!(
            "a {} without its extra field or header",
            reply.status
        ));
    }
    code.map(str::to_owned)
}

/// A success body parses: JSON, a snapshot matching its sha256, or the
/// start of an event stream.
fn success_body(request: &Request, reply: &Reply, problems: &mut Vec<String>) {
    let content_type = reply.header("content-type").unwrap_or_default();
    if matches!(reply.status, 204 | 304) || content_type.starts_with("text/event-stream") {
        return;
    }
    if content_type.starts_with("application/octet-stream") {
        let announced = reply.header("x-stasis-sha256").unwrap_or_default();
        if sha256_hex(&reply.body) != announced {
            problems.push(format!(
                "served bytes that do not match X-Stasis-Sha256 {announced}"
            ));
        }
        return;
    }
    if serde_json::from_slice::<Value>(&reply.body).is_err() {
        problems.push(format!(
            "a {} to {} whose body is not JSON: {}",
            reply.status,
            request.method,
            excerpt(&reply.body)
        ));
    }
}

/// The start of a body, for a report.
pub fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    format!("{text:?}")
}
