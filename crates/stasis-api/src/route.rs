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
    /// `/api/towns/{town}/rigs/{rig}/agents/{agent}/db-snapshot`
    AgentSnapshot(AgentKey),
}

/// An endpoint's kind: what the path's shape says before its ids are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Health,
    AgentEvents,
    AgentSessions,
    AgentSnapshot,
}

impl Kind {
    fn allowed_methods(self) -> &'static [Method] {
        match self {
            Kind::Health | Kind::AgentSessions => &[Method::GET],
            Kind::AgentEvents => &[Method::GET, Method::POST],
            Kind::AgentSnapshot => &[Method::GET, Method::PUT, Method::POST, Method::DELETE],
        }
    }
}

impl Endpoint {
    /// The town whose scope this endpoint needs, if any.
    pub fn town(&self) -> Option<&str> {
        match self {
            Endpoint::Health => None,
            Endpoint::AgentEvents(key)
            | Endpoint::AgentSessions(key)
            | Endpoint::AgentSnapshot(key) => Some(&key.town),
        }
    }
}

/// Resolves `raw_path` (still percent-encoded) for `method`: 404 when no
/// route has its shape, 405 when the route does not take the method, 400
/// when an id in it is invalid.
pub fn resolve(raw_path: &str, method: &Method) -> Result<Endpoint, ApiError> {
    let decoded = decode_segments(raw_path)?;
    let segments: Vec<&str> = decoded.iter().map(String::as_str).collect();
    let (kind, ids): (Kind, &[&str]) = match segments.as_slice() {
        ["healthz"] => (Kind::Health, &[]),
        ["api", "towns", _, "rigs", _, "agents", _, "events"] => {
            (Kind::AgentEvents, &segments[2..7])
        }
        ["api", "towns", _, "rigs", _, "agents", _, "sessions"] => {
            (Kind::AgentSessions, &segments[2..7])
        }
        ["api", "towns", _, "rigs", _, "agents", _, "db-snapshot"] => {
            (Kind::AgentSnapshot, &segments[2..7])
        }
        _ => return Err(ApiError::no_route(raw_path)),
    };
    let allowed = kind.allowed_methods();
    let takes =
        allowed.contains(method) || (method == Method::HEAD && allowed.contains(&Method::GET));
    if !takes {
        return Err(method_not_allowed(allowed, method));
    }
    let agent_key = || match ids {
        [town, _, rig, _, agent] => AgentKey::new(town, rig, agent).map_err(ApiError::from),
        _ => Err(ApiError::no_route(raw_path)),
    };
    Ok(match kind {
        Kind::Health => Endpoint::Health,
        Kind::AgentEvents => Endpoint::AgentEvents(agent_key()?),
        Kind::AgentSessions => Endpoint::AgentSessions(agent_key()?),
        Kind::AgentSnapshot => Endpoint::AgentSnapshot(agent_key()?),
    })
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
fn method_not_allowed(allowed: &[Method], method: &Method) -> ApiError {
    let mut names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    if allowed.contains(&Method::GET) {
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

    #[test]
    fn the_method_is_checked_before_ids() {
        let err = resolve("/api/towns/a%2Fb/rigs/r/agents/a/events", &Method::DELETE);
        assert_eq!(
            err.map_err(|e| e.code),
            Err("method_not_allowed".to_owned())
        );
    }
}
