//! Which endpoint a path names, and which methods it takes.

use crate::error::ApiError;
use http::{Method, StatusCode, header};
use stasis_domain::{DomainError, ids::AgentKey};

/// An endpoint, with the ids its path carries (already validated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `GET /healthz`
    Health,
    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}/events`
    AgentEvents(AgentKey),
    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}/sessions`
    AgentSessions(AgentKey),
}

impl Endpoint {
    /// The methods this endpoint answers.
    pub fn allowed_methods(&self) -> &'static [Method] {
        match self {
            Endpoint::Health | Endpoint::AgentSessions(_) => &[Method::GET],
            Endpoint::AgentEvents(_) => &[Method::GET, Method::POST],
        }
    }

    /// The town whose scope this endpoint needs, if any.
    pub fn town(&self) -> Option<&str> {
        match self {
            Endpoint::Health => None,
            Endpoint::AgentEvents(key) | Endpoint::AgentSessions(key) => Some(&key.town),
        }
    }

    /// True for the endpoints that need no token.
    pub fn is_public(&self) -> bool {
        matches!(self, Endpoint::Health)
    }
}

/// The shape of a path before its ids are checked.
enum Pattern<'a> {
    Health,
    Agent {
        town: &'a str,
        rig: &'a str,
        agent: &'a str,
        rest: &'a [&'a str],
    },
}

/// Resolves `raw_path` (still percent-encoded) to an endpoint: 404 when no
/// route has its shape, 400 when an id in it is invalid.
pub fn resolve(raw_path: &str) -> Result<Endpoint, ApiError> {
    let decoded = decode_segments(raw_path)?;
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let pattern = match segments.as_slice() {
        ["healthz"] => Pattern::Health,
        [
            "api",
            "towns",
            town,
            "rigs",
            rig,
            "agents",
            agent,
            rest @ ..,
        ] => Pattern::Agent {
            town,
            rig,
            agent,
            rest,
        },
        _ => return Err(ApiError::no_route(raw_path)),
    };
    match pattern {
        Pattern::Health => Ok(Endpoint::Health),
        Pattern::Agent {
            town,
            rig,
            agent,
            rest,
        } => {
            // Check the shape first so that a bad id on a path that could
            // never exist is still a 404.
            let make: fn(AgentKey) -> Endpoint = match rest {
                ["events"] => Endpoint::AgentEvents,
                ["sessions"] => Endpoint::AgentSessions,
                _ => return Err(ApiError::no_route(raw_path)),
            };
            Ok(make(AgentKey::new(town, rig, agent)?))
        }
    }
}

/// Splits a path into percent-decoded segments. A trailing slash is
/// ignored; an empty segment in the middle is not a valid id.
fn decode_segments(raw_path: &str) -> Result<Vec<String>, ApiError> {
    let trimmed = raw_path.strip_prefix('/').unwrap_or(raw_path);
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    trimmed
        .split('/')
        .map(|segment| {
            percent_encoding::percent_decode_str(segment)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| {
                    ApiError::from(DomainError::invalid(
                        "invalid_id",
                        "path segments must be percent-encoded UTF-8",
                    ))
                })
        })
        .collect()
}

/// 405 for a method the endpoint does not take.
pub fn method_not_allowed(endpoint: &Endpoint, method: &Method) -> ApiError {
    let allowed: Vec<&str> = endpoint
        .allowed_methods()
        .iter()
        .map(Method::as_str)
        .collect();
    let mut allow = allowed.join(", ");
    if endpoint.allowed_methods().contains(&Method::GET) {
        allow.push_str(", HEAD");
    }
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{method} is not allowed here; allowed: {allow}"),
    )
    .with("allowed", allowed)
    .with_header(header::ALLOW, allow)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(path: &str) -> String {
        resolve(path)
            .map(|_| "ok".to_owned())
            .unwrap_or_else(|e| e.code)
    }

    #[test]
    fn resolves_agent_paths_with_decoded_ids() {
        let endpoint = resolve("/api/towns/t%3A1/rigs/r/agents/a.b/events").map_err(|e| e.code);
        assert_eq!(
            endpoint,
            Ok(Endpoint::AgentEvents(AgentKey {
                town: "t:1".into(),
                rig: "r".into(),
                agent: "a.b".into()
            }))
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
}
