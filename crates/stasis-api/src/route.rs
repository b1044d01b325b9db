//! Which endpoint a path names, and which methods it takes: the paths,
//! methods and auth needs are the route table's ([`crate::table`]).

pub use crate::endpoint::{AgentEndpoint, Endpoint, TownEndpoint};
use crate::{error::ApiError, table};
use http::{Method, StatusCode, header};
use stasis_domain::{ids, ids::AgentKey};

impl Endpoint {
    /// The path template of its route, as `docs/http-api.md` spells it
    /// (`/api/towns/{town}/rigs/{rig}/agents/{agent}/events`): a label
    /// that does not grow with the ids a path carries.
    pub fn template(&self) -> &'static str {
        table::routes()
            .find(|route| same_variant(&route.sample(), self))
            .map_or("", |route| route.template)
    }
}

/// Whether two endpoints name the same route, whatever their ids.
fn same_variant(a: &Endpoint, b: &Endpoint) -> bool {
    use std::mem::discriminant;
    match (a, b) {
        (Endpoint::Town(_, x), Endpoint::Town(_, y)) => x == y,
        (Endpoint::Agent(_, x), Endpoint::Agent(_, y)) => discriminant(x) == discriminant(y),
        _ => a == b,
    }
}

/// Whether `path` needs no token: the probes, the OpenAPI document, and
/// anything under `/ui` (the operator page holds no data; its calls carry
/// a token, and a file it lacks is a 404, not a 401).
pub fn is_public(path: &str) -> bool {
    let decoded = decode_segments(path);
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    table::find(&segments).is_some_and(|(route, _)| route.public) || crate::ui::is_ui_path(path)
}

/// Resolves `raw_path` (still percent-encoded) for `method`: 404 when no
/// route has its shape, 405 when the route does not take the method, 400
/// when an id in it is invalid.
pub fn resolve(raw_path: &str, method: &Method) -> Result<Endpoint, ApiError> {
    let decoded = decode_segments(raw_path);
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    // The shape first (ids unchecked), so that 404 and 405 come before 400.
    let (route, params) = table::find(&segments).ok_or_else(|| ApiError::no_route(raw_path))?;
    let allowed: Vec<&Method> = route.methods().collect();
    let takes =
        allowed.contains(&method) || (method == Method::HEAD && allowed.contains(&&Method::GET));
    if !takes {
        return Err(method_not_allowed(&allowed, method));
    }
    let endpoint = (route.endpoint)(&params);
    check_ids(&endpoint)?;
    Ok(endpoint)
}

/// Every id in the path must be a valid id.
fn check_ids(endpoint: &Endpoint) -> Result<(), ApiError> {
    let check = |what: &str, id: &str| ids::check_id(what, id).map(drop).map_err(ApiError::from);
    match endpoint {
        Endpoint::Health
        | Endpoint::Live
        | Endpoint::Metrics
        | Endpoint::OpenApi
        | Endpoint::RefreshToken
        | Endpoint::Ui(_) => Ok(()),
        Endpoint::Town(town, _) => check("town", town),
        Endpoint::Agent(key, endpoint) => {
            AgentKey::new(&key.town, &key.rig, &key.agent).map_err(ApiError::from)?;
            match endpoint {
                AgentEndpoint::Session(id) => check("session", id),
                AgentEndpoint::MemoryEntry(key) => check("memory key", key),
                AgentEndpoint::HistoryPin(name) => check("pin", name),
                AgentEndpoint::SnapshotChunk(chunk) | AgentEndpoint::WorkspaceChunk(chunk) => {
                    check_chunk_name(chunk)
                }
                _ => Ok(()),
            }
        }
    }
}

/// A chunk is named by its sha256: 64 lowercase hex digits.
fn check_chunk_name(chunk: &str) -> Result<(), ApiError> {
    let lower_hex = chunk.len() == 64
        && chunk
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if lower_hex {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_id",
        format!("a chunk is named by its sha256 as 64 lowercase hex digits; got {chunk:?}"),
    ))
}

/// Splits a path into percent-decoded segments. A trailing slash is
/// ignored; an empty segment in the middle is not a valid id. A segment
/// that does not decode to UTF-8 is kept as written: its `%` makes it no
/// route's fixed segment and no valid id, so the shape and the method are
/// judged before it is refused as an id (the documented order).
pub(crate) fn decode_segments(raw_path: &str) -> Vec<String> {
    let trimmed = raw_path.strip_prefix('/').unwrap_or(raw_path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    trimmed
        .split('/')
        .map(|segment| {
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .map_or_else(|_| segment.to_owned(), |s| s.into_owned())
        })
        .collect()
}

/// 405 for a method the endpoint does not take.
fn method_not_allowed(allowed: &[&Method], method: &Method) -> ApiError {
    let mut names: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
    if allowed.contains(&&Method::GET) {
        names.push(Method::HEAD.as_str());
    }
    let allow = names.join(", ");
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed here; allowed: {allow}"),
    )
    .with("allowed", names)
    .with_header(header::ALLOW, allow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(path: &str) -> String {
        resolve(path, &Method::GET)
            .map(|_| "ok".to_owned())
            .unwrap_or_else(|e| e.code)
    }

    #[test]
    fn resolves_agent_paths_with_decoded_ids() {
        let endpoint =
            resolve("/api/towns/t%3A1/rigs/r/agents/a.b/events", &Method::GET).map_err(|e| e.code);
        assert_eq!(
            endpoint,
            Ok(Endpoint::Agent(
                AgentKey {
                    town: "t:1".into(),
                    rig: "r".into(),
                    agent: "a.b".into()
                },
                AgentEndpoint::Events
            ))
        );
    }

    #[test]
    fn dot_segments_and_encoded_slashes_are_invalid_ids() {
        assert_eq!(code("/api/towns/../rigs/r/agents/a/events"), "invalid_id");
        assert_eq!(
            code("/api/towns/%2E%2E/rigs/r/agents/a/events"),
            "invalid_id"
        );
        assert_eq!(
            code("/api/towns/a%2Fb/rigs/r/agents/a/events"),
            "invalid_id"
        );
        assert_eq!(code("/api/towns/%FF/rigs/r/agents/a/events"), "invalid_id");
    }

    #[test]
    fn unknown_shapes_are_not_found() {
        assert_eq!(code("/api/towns/t/rigs/r/agents/a/nope"), "not_found");
        assert_eq!(code("/nope"), "not_found");
        assert_eq!(code("/api/towns/../rigs/r/agents/a/nope"), "not_found");
    }

    #[test]
    fn health_paths_resolve_for_get_and_head_only() {
        assert_eq!(
            resolve("/healthz", &Method::GET).map_err(|e| e.code),
            Ok(Endpoint::Health)
        );
        assert_eq!(
            resolve("/livez", &Method::HEAD).map_err(|e| e.code),
            Ok(Endpoint::Live)
        );
        assert_eq!(
            resolve("/livez", &Method::POST)
                .map(|_| ())
                .map_err(|e| e.code),
            Err("method_not_allowed".to_owned())
        );
    }

    #[test]
    fn the_method_is_checked_before_ids() {
        for town in ["a%2Fb", "%FF", "%C3"] {
            let path = format!("/api/towns/{town}/rigs/r/agents/a/events");
            let err = resolve(&path, &Method::DELETE);
            assert_eq!(
                err.map(|_| ()).map_err(|e| e.code),
                Err("method_not_allowed".to_owned()),
                "{path}"
            );
        }
        assert_eq!(code("/api/%FF/t"), "not_found");
    }

    #[test]
    fn town_and_agent_sub_resources_resolve() {
        let town = resolve("/api/towns/t/mayor/message", &Method::POST).map_err(|e| e.code);
        assert_eq!(
            town,
            Ok(Endpoint::Town("t".into(), TownEndpoint::MayorMessage))
        );
        let memory =
            resolve("/api/towns/t/rigs/r/agents/a/memory/k.1", &Method::PUT).map_err(|e| e.code);
        assert!(matches!(
            memory,
            Ok(Endpoint::Agent(_, AgentEndpoint::MemoryEntry(ref k))) if k == "k.1"
        ));
        assert_eq!(
            resolve("/api/towns/t/rigs/r/agents/a/memory/..", &Method::GET)
                .map(|_| ())
                .map_err(|e| e.code),
            Err("invalid_id".to_owned())
        );
        assert_eq!(
            resolve("/api/towns/t/heartbeat", &Method::GET)
                .map(|_| ())
                .map_err(|e| e.code),
            Err("method_not_allowed".to_owned())
        );
    }
}
